package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/queuey/queuey/internal/adminapi"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/internal/syncx"
)

// memSub is a MemoryBackend subscription.
type memSub struct {
	b        *MemoryBackend
	q        *memQueue
	prefetch int
	ch       chan Delivery
	unacked  map[*memDelivery]struct{}
	stopped  bool
	closed   bool
	err      error                   // set when the backend closed
	dead     syncx.Notes[DeadLetter] // what the backend dead-lettered itself
	orphans  OrphanCheck             // the consuming worker's, if any: its copies are no attempt
}

func (s *memSub) Deliveries() <-chan Delivery { return s.ch }

// NotifyDeadLettered implements DeadLetterNotifier.
func (s *memSub) NotifyDeadLettered(fn func(DeadLetter)) { s.dead.Listen(fn) }

// Err is ErrClosed (wrapped) after the backend closed, nil otherwise.
func (s *memSub) Err() error {
	s.b.mu.Lock()
	defer s.b.unlock()
	return s.err
}

// Stop hands out no more deliveries and closes the channel.
func (s *memSub) Stop() error {
	s.b.mu.Lock()
	defer s.b.unlock()
	if !s.stopped {
		s.stopped = true
		close(s.ch)
	}
	return nil
}

// Close requeues every unsettled delivery at its old place.
func (s *memSub) Close() error {
	s.b.mu.Lock()
	defer s.b.unlock()
	s.closeLocked(true)
	return nil
}

func (s *memSub) closeLocked(requeue bool) {
	if s.closed {
		return
	}
	s.closed = true
	if !requeue {
		// The backend is closing: what is still buffered can never be
		// settled, so no handler should start on it.
		for len(s.ch) > 0 {
			<-s.ch
		}
	}
	if !s.stopped {
		s.stopped = true
		close(s.ch)
	}
	s.q.subs = slices.DeleteFunc(s.q.subs, func(o *memSub) bool { return o == s })
	if requeue {
		for d := range s.unacked {
			d.msg.returns++
			s.q.ready.push(d.msg)
		}
	}
	clear(s.unacked)
	if requeue {
		s.b.dispatchLocked(s.q)
	}
}

// memDelivery is one message handed to a memSub.
type memDelivery struct {
	b   *MemoryBackend
	q   *memQueue
	sub *memSub
	msg *memMsg
	// env is the consumer's copy of msg's envelope: its fields and
	// headers are the consumer's to change. The payload is shared;
	// nothing writes to it.
	env Envelope

	redelivered bool // the message was handed out before and never settled
}

func (d *memDelivery) Envelope() *Envelope { return &d.env }

// Redelivered reports whether the job was handed out before without being
// settled: its subscription closed first, or it was requeued.
func (d *memDelivery) Redelivered() bool { return d.redelivered }

// heldLocked fails when d is no longer held by its subscription.
func (d *memDelivery) heldLocked() error {
	if _, ok := d.sub.unacked[d]; !ok {
		if d.sub.closed {
			return fmt.Errorf("%w: subscription to %q", ErrClosed, d.q.cfg.Name)
		}
		return fmt.Errorf("queuey: delivery of job %s already settled", d.env.ID)
	}
	return nil
}

// settle removes d from its subscription's unacked set, then runs then
// (under the lock) if given. It fails when d is no longer held.
func (d *memDelivery) settle(then func(*memQueue)) error {
	d.b.mu.Lock()
	defer d.b.unlock()
	if err := d.heldLocked(); err != nil {
		return err
	}
	delete(d.sub.unacked, d)
	if then != nil {
		then(d.q)
	}
	d.b.dispatchLocked(d.q)
	return nil
}

func (d *memDelivery) Ack(ctx context.Context) error { return d.settle(nil) }

func (d *memDelivery) Requeue(ctx context.Context) error {
	return d.settle(func(q *memQueue) {
		d.msg.returns++
		q.ready.push(d.msg)
	})
}

// Release puts d back at its place without counting a return.
func (d *memDelivery) Release(ctx context.Context) error {
	return d.settle(func(q *memQueue) { q.ready.push(d.msg) })
}

func (d *memDelivery) Retry(ctx context.Context, next *Envelope, delay time.Duration) error {
	return d.wait(ctx, next, delay, false)
}

func (d *memDelivery) Defer(ctx context.Context, next *Envelope, delay time.Duration) error {
	return d.wait(ctx, next, delay, true)
}

// wait publishes next and settles d in one critical section, so a close of
// the subscription cannot land between them and both requeue d and keep
// the copy.
func (d *memDelivery) wait(ctx context.Context, next *Envelope, delay time.Duration, ahead bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	delay, err := waits.RoundAtLeastOne(delay, DefaultGranularity)
	if err != nil {
		return fmt.Errorf("queue %q: %w", d.q.cfg.Name, err)
	}
	d.b.mu.Lock()
	defer d.b.unlock()
	if err := d.heldLocked(); err != nil {
		return err
	}
	kind := adminapi.HoldRetry
	if ahead {
		kind = adminapi.HoldDeferred
	}
	if err := d.b.publishLocked(next.Clone(), next.Priority, delay, ahead, kind); err != nil {
		return err
	}
	delete(d.sub.unacked, d)
	d.b.dispatchLocked(d.q)
	return nil
}

func (d *memDelivery) DeadLetter(ctx context.Context, next *Envelope, reason string) error {
	dl := memDead{env: next.Clone(), reason: reason, at: d.b.deadNow()}
	return d.settle(func(q *memQueue) { q.dead = append(q.dead, dl) })
}
