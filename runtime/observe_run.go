package runtime

import (
	"context"
	"errors"
	"time"
)

// observedRun carries one run from its start to its outcome for the
// worker's observers. One without observers (the zero value) does nothing,
// so the runner calls it unconditionally. It lives on the runner's stack:
// nothing keeps a pointer to it past the run.
type observedRun struct {
	observers []Observer
	ctx       context.Context // as the observers' Start returned it
	out       Outcome
	started   time.Time
	reported  bool
}

// observe tells the worker's observers that env's run starts on delivery d,
// sets r, which must be zero, to the run's handle, and returns the context
// the run should use.
func (c *queueRunner) observe(r *observedRun, base context.Context, d Delivery, env *Envelope) context.Context {
	if len(c.w.observers) == 0 {
		return base
	}
	*r = observedRun{
		observers: c.w.observers,
		ctx:       base,
		started:   time.Now(),
		out: Outcome{
			Queue:       c.queue.Name,
			JobID:       env.ID,
			JobKind:     env.Kind,
			Attempt:     env.Attempt,
			MaxAttempts: env.MaxAttempts,
		},
	}
	if r.out.JobKind == "" {
		r.out.JobKind = c.queue.Kind
	}
	if !env.EnqueuedAt.IsZero() {
		r.out.QueueLatency = max(r.started.Sub(env.EnqueuedAt), 0)
	}
	seen := env
	if env.Queue != r.out.Queue || env.Kind != r.out.JobKind {
		// A job that names no kind, or another queue: its observers see
		// the queue and kind its outcome will carry, so that what they
		// keep by queue and kind at the start they find at the end.
		named := *env
		named.Queue, named.Kind = r.out.Queue, r.out.JobKind
		seen = &named
	}
	for _, o := range r.observers {
		r.ctx = o.Start(r.ctx, seen)
	}
	if rd, ok := d.(Redelivery); ok && rd.Redelivered() {
		r.tell(OutcomeRedelivered)
	}
	return r.ctx
}

// ran records the handler's result and how long it took.
func (r *observedRun) ran(err error) {
	if r.observers == nil {
		return
	}
	r.out.HandlerDuration = time.Since(r.started)
	r.out.Err = err
}

// settled reports kind when err (the settle's error) is nil, and returns err.
func (r *observedRun) settled(err error, kind OutcomeKind, delay time.Duration, reason string) error {
	if r.observers == nil || err != nil {
		return err
	}
	r.out.Delay, r.out.Reason = delay, reason
	r.tell(kind)
	return nil
}

// unsettled reports a run whose outcome was not recorded: requeued when
// requeueErr is nil, abandoned otherwise (or when requeued is false).
func (r *observedRun) unsettled(settleErr error, requeued bool, requeueErr error) {
	if r.observers == nil {
		return
	}
	r.out.SettleErr = settleErr
	if requeued && requeueErr == nil {
		r.tell(OutcomeRequeued)
		return
	}
	if requeueErr != nil {
		r.out.SettleErr = requeueErr
	}
	r.tell(OutcomeAbandoned)
}

// abandonIfUnreported reports OutcomeAbandoned when nothing settled the run,
// so that every started run gets exactly one settled outcome.
func (r *observedRun) abandonIfUnreported() {
	if r.observers != nil && !r.reported {
		r.tell(OutcomeAbandoned)
	}
}

func (r *observedRun) tell(kind OutcomeKind) {
	if kind.Settled() {
		if r.reported {
			return
		}
		r.reported = true
	}
	out := r.out
	out.Kind = kind
	if kind == OutcomeRedelivered {
		out.Err, out.HandlerDuration = nil, 0
	}
	for _, o := range r.observers {
		o.Outcome(r.ctx, out)
	}
}

// subscribe consumes the runner's queue, telling the backend which
// redelivered jobs are the runner's orphans, and, when the subscription is a
// DeadLetterNotifier, has the worker's observers told of the messages it
// dead-letters itself; a worker without observers tells it that no
// listener comes, so that it keeps none of them.
func (c *queueRunner) subscribe(ctx context.Context) (Subscription, error) {
	sub, err := c.w.backend.Consume(WithOrphanCheck(ctx, c.orphans.has), c.queue)
	if err != nil {
		return nil, err
	}
	if dn, ok := sub.(DeadLetterNotifier); ok {
		if len(c.w.observers) > 0 {
			dn.NotifyDeadLettered(c.deadLettered)
		} else {
			dn.NotifyDeadLettered(nil)
		}
	}
	return sub, nil
}

// deadLettered tells the observers of a message the subscription
// dead-lettered itself: a run that starts and ends dead-lettered, with
// no handler.
func (c *queueRunner) deadLettered(dl DeadLetter) {
	env, reason := dl.Env, dl.Reason
	env.MaxAttempts = c.queue.MaxAttempts // the queue's rule, as for a run
	if env.Attempt <= 0 {
		env.Attempt = 1
	}
	var run observedRun
	c.observe(&run, context.Background(), nil, env)
	run.out.Err = errors.New(reason)
	_ = run.settled(nil, OutcomeDeadLettered, 0, reason)
}
