package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/internal/rules/waits"
)

// runOne runs env through the handler registered for queue, with w's
// middleware and observers, and settles it on a delivery that only
// records the outcome (Hooks). w is not started.
func (w *Worker) runOne(ctx context.Context, queue string, env *Envelope) (hooks.Settled, error) {
	w.mu.Lock()
	regErr := errors.Join(w.regErrs...)
	i := slices.IndexFunc(w.regs, func(r registration) bool { return r.queue.Name == queue })
	var reg registration
	if i >= 0 {
		reg = w.regs[i]
	}
	middleware := w.middleware
	w.mu.Unlock()
	if regErr != nil {
		return hooks.Settled{}, regErr
	}
	if i < 0 {
		return hooks.Settled{}, fmt.Errorf("%w: no handler for queue %q on this worker", ErrInvalidOption, queue)
	}
	// The test kit's run n of max (queueytest.Attempt) stands for a queue
	// of max attempts: deliveries take the queue's instead (process).
	q := reg.queue
	if env.MaxAttempts > 0 {
		q.MaxAttempts = env.MaxAttempts
	}
	c := &queueRunner{w: w, queue: q, handler: wrap(reg.handler, middleware)}
	d := &recordedDelivery{env: env.Clone()}
	c.process(ctx, &settleGate{}, &timers{}, nil, d, nil)
	return d.settled, nil
}

// recordedDelivery is a delivery of no backend: it records how it was
// settled, refusing the waits a backend refuses.
type recordedDelivery struct {
	env     *Envelope
	settled hooks.Settled
}

func (d *recordedDelivery) Envelope() *Envelope { return d.env }

func (d *recordedDelivery) Ack(ctx context.Context) error {
	d.settled = hooks.Settled{Outcome: hooks.Acked}
	return nil
}

func (d *recordedDelivery) Requeue(ctx context.Context) error {
	d.settled = hooks.Settled{Outcome: hooks.Requeued}
	return nil
}

func (d *recordedDelivery) Release(ctx context.Context) error { return nil }

func (d *recordedDelivery) Retry(ctx context.Context, next *Envelope, delay time.Duration) error {
	return d.wait(hooks.Retried, next.LastError, delay)
}

func (d *recordedDelivery) Defer(ctx context.Context, next *Envelope, delay time.Duration) error {
	return d.wait(hooks.Deferred, "", delay)
}

func (d *recordedDelivery) wait(outcome, reason string, delay time.Duration) error {
	delay, err := waits.RoundAtLeastOne(delay, DefaultGranularity)
	if err != nil {
		return fmt.Errorf("queue %q: %w", d.env.Queue, err)
	}
	d.settled = hooks.Settled{Outcome: outcome, Delay: delay, Reason: reason}
	return nil
}

func (d *recordedDelivery) DeadLetter(ctx context.Context, next *Envelope, reason string) error {
	d.settled = hooks.Settled{Outcome: hooks.DeadLettered, Reason: reason}
	return nil
}
