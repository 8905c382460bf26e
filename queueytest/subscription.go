package queueytest

import (
	"context"
	"sync"
	"time"

	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// subscription hands on the deliveries of a memory-backend subscription,
// each wrapped so that its outcome is recorded when it is settled.
type subscription struct {
	runtime.Subscription
	b         *Backend
	out       chan runtime.Delivery
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (s *subscription) Deliveries() <-chan runtime.Delivery { return s.out }

// NotifyDeadLettered passes fn on to the memory backend's subscription, so
// that a worker's observers hear of the poison it moves aside.
func (s *subscription) NotifyDeadLettered(fn func(runtime.DeadLetter)) {
	if dn, ok := s.Subscription.(runtime.DeadLetterNotifier); ok {
		dn.NotifyDeadLettered(fn)
	}
}

var _ runtime.DeadLetterNotifier = (*subscription)(nil)

func (s *subscription) forward() {
	defer close(s.out)
	for d := range s.Subscription.Deliveries() {
		select {
		case s.out <- &delivery{Delivery: d, b: s.b}:
		case <-s.done:
			return // the memory backend puts the delivery back
		}
	}
}

func (s *subscription) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	return s.Subscription.Close()
}

// delivery records the outcome of a settled delivery.
type delivery struct {
	runtime.Delivery
	b *Backend
}

// settle runs settle, the memory backend's, and records o when it
// succeeds. The settle counts as under way until o is recorded, so that
// Drain never sees the delivery gone and its outcome not yet there.
func (d *delivery) settle(o Outcome, settle func() error) error {
	d.b.mu.Lock()
	d.b.settling++
	d.b.mu.Unlock()
	err := settle()
	env := d.Envelope()
	o.ID, o.Queue, o.Kind, o.Attempt = env.ID, env.Queue, env.Kind, env.Attempt
	d.b.mu.Lock()
	d.b.settling--
	if err == nil {
		d.b.outcomes = append(d.b.outcomes, o)
	}
	d.b.mu.Unlock()
	d.b.notify()
	return err
}

func (d *delivery) Ack(ctx context.Context) error {
	return d.settle(Outcome{Result: Done}, func() error { return d.Delivery.Ack(ctx) })
}

func (d *delivery) Requeue(ctx context.Context) error {
	return d.settle(Outcome{Result: Requeued}, func() error { return d.Delivery.Requeue(ctx) })
}

func (d *delivery) Retry(ctx context.Context, next *runtime.Envelope, delay time.Duration) error {
	wait, _ := waits.RoundAtLeastOne(delay, runtime.DefaultGranularity)
	return d.settle(Outcome{Result: Retried, Delay: wait, Reason: next.LastError}, func() error { return d.Delivery.Retry(ctx, next, delay) })
}

func (d *delivery) Defer(ctx context.Context, next *runtime.Envelope, delay time.Duration) error {
	wait, _ := waits.RoundAtLeastOne(delay, runtime.DefaultGranularity)
	return d.settle(Outcome{Result: Deferred, Delay: wait}, func() error { return d.Delivery.Defer(ctx, next, delay) })
}

func (d *delivery) DeadLetter(ctx context.Context, next *runtime.Envelope, reason string) error {
	return d.settle(Outcome{Result: DeadLettered, Reason: reason}, func() error { return d.Delivery.DeadLetter(ctx, next, reason) })
}
