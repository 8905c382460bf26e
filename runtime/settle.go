package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// settleRetryDelay is how long a job whose outcome could not be recorded
// waits before it is put back on its queue; it doubles with each failure in
// a row on the queue, up to maxSettleRetryDelay.
const (
	settleRetryDelay    = time.Second
	maxSettleRetryDelay = 30 * time.Second
)

// timers are pending delayed calls that stop together.
type timers struct {
	mu      sync.Mutex
	stopped bool
	set     map[*time.Timer]struct{}
}

// after calls fn after d, unless stop comes first.
func (ts *timers) after(d time.Duration, fn func()) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.stopped {
		return
	}
	if ts.set == nil {
		ts.set = map[*time.Timer]struct{}{}
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		ts.mu.Lock()
		_, ok := ts.set[t]
		delete(ts.set, t)
		ts.mu.Unlock()
		if ok {
			fn()
		}
	})
	ts.set[t] = struct{}{}
}

func (ts *timers) stop() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.stopped = true
	for t := range ts.set {
		t.Stop()
	}
	clear(ts.set)
}

// settleGate lets settles run until shutdown closes it; after that, results
// of late handlers are dropped and their jobs left for redelivery.
type settleGate struct {
	mu     sync.RWMutex
	closed bool
}

func (g *settleGate) enter() bool {
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return false
	}
	return true
}

func (g *settleGate) leave() { g.mu.RUnlock() }

func (g *settleGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// process runs one delivery's handler and settles it by the outcome. slot,
// when not nil, is the handler goroutine's, through which the run may be
// orphaned. permit, when not nil, is released as the run returns (or
// when no run begins).
func (c *queueRunner) process(base context.Context, gate *settleGate, requeues *timers, slot *runSlot, d Delivery, permit Permit) {
	release := releaser(permit)
	defer release()
	env := d.Envelope()
	env.MaxAttempts = c.queue.MaxAttempts // the queue's rule, whoever produced the job
	if env.Attempt <= 0 {
		env.Attempt = 1
	}
	if c.adopt(base, gate, d, env) {
		return
	}
	if slot != nil && !slot.begin(env) {
		// The subscription ended before the run began: the delivery
		// cannot be settled, and the broker delivers the job again.
		// Running it now would run it beside that copy.
		c.w.log.Debug("queuey: consumer ended before the job started; it will be delivered again", "queue", c.queue.Name, "job_id", env.ID)
		return
	}
	var run observedRun
	ctx := c.observe(&run, base, d, env)
	defer run.abandonIfUnreported()
	if s, ok := permit.(PermitStarter); ok {
		s.Started()
	}
	err := c.call(ctx, env)
	release()
	run.ran(err)
	if slot != nil {
		if r := slot.end(); r != nil {
			// Its delivery is gone: the outcome settles the broker's
			// copy when it comes.
			c.orphans.finish(r, err, &run)
			return
		}
	}
	if !gate.enter() {
		return
	}
	defer gate.leave()
	if base.Err() != nil {
		return // shutdown timeout: leave the job for redelivery
	}
	serr := c.settle(base, ctx, d, env, err, &run)
	if serr == nil {
		if c.settleFailures.Load() != 0 {
			c.settleFailures.Store(0)
		}
		return
	}
	if errors.Is(serr, ErrClosed) {
		// The delivery's channel is gone: the backend delivers it again.
		c.w.log.WarnContext(ctx, "queuey: consumer closed before the job was settled; it will be delivered again", "queue", c.queue.Name, "job_id", env.ID, "error", serr)
		run.unsettled(serr, false, nil)
		return
	}
	// The outcome could not be recorded (its publish failed, say), so
	// the job must run again; but not at once, or a lasting failure
	// would spin the handler. It goes back to the queue after a wait
	// that grows while failures go on; meanwhile it holds a prefetch
	// slot, but not this handler slot, and nothing else waits for it.
	n := c.settleFailures.Add(1)
	delay := min(settleRetryDelay<<min(n-1, 5), maxSettleRetryDelay)
	c.w.log.ErrorContext(ctx, "queuey: settle failed; job will be delivered again", "queue", c.queue.Name, "job_id", env.ID, "error", serr, "after", delay)
	requeues.after(delay, func() {
		if rerr := d.Requeue(base); rerr != nil && !errors.Is(rerr, ErrClosed) {
			c.w.log.ErrorContext(ctx, "queuey: requeue failed; job stays unsettled until the consumer closes", "queue", c.queue.Name, "job_id", env.ID, "error", rerr)
		}
	})
	// Observers hear of the requeue now, as it is scheduled: the run ends
	// here, and the requeue happens later, elsewhere.
	run.unsettled(serr, true, nil)
}

// call runs the handler with the job's Info and timeout, turning a panic into
// an error.
func (c *queueRunner) call(base context.Context, env *Envelope) (err error) {
	ctx := withInfo(base, Info{
		ID:          env.ID,
		Queue:       c.queue.Name,
		Attempt:     env.Attempt,
		MaxAttempts: env.MaxAttempts,
		EnqueuedAt:  env.EnqueuedAt,
		Headers:     env.Headers,
	})
	if c.queue.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.queue.Timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			c.w.log.ErrorContext(base, "queuey: handler panicked", "queue", c.queue.Name, "job_id", env.ID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return vetHandlerError(c.handler(ctx, env))
}

// vetHandlerError returns err, which a handler returned, or an error that
// says why it cannot be read as an outcome: a nil *DeferError (a typed
// nil, not Defer(d)), or an error whose methods (Error, Unwrap, Is, As)
// panic. What settles a job calls those methods; read once here, under
// recover, they cannot crash the worker later. Either way the run counts
// as failed, like a handler that panicked.
func vetHandlerError(err error) (vetted error) {
	if err == nil {
		return nil
	}
	if de, ok := err.(*DeferError); ok && de != nil {
		return err // Defer(d) itself: its methods are this package's
	}
	defer func() {
		if r := recover(); r != nil {
			vetted = fmt.Errorf("handler returned an error of type %T whose methods panicked: %v", err, r)
		}
	}()
	var de *DeferError
	if errors.As(err, &de) && de == nil {
		return fmt.Errorf("handler returned a nil %T, not runtime.Defer(d)", de)
	}
	var pe *PermanentError
	if errors.As(err, &pe) && pe == nil {
		return fmt.Errorf("handler returned a nil %T, not runtime.Permanent(err)", pe)
	}
	_ = err.Error()
	_ = errors.As(err, new(*DecodeError))
	_ = errors.As(err, new(*KindError))
	_ = errors.As(err, new(*RuleError))
	return err
}

// settle applies the handler's outcome to d, through the backend with ctx;
// it logs with the run's context, runCtx (the one the observers made, which
// may carry a span for a log handler to read). A wait the backend refuses
// (too long for it, or onto a queue it does not know) leaves d unsettled;
// settle then falls through to the next outcome (a refused deferral counts
// as a failed run, a refused retry dead-letters) instead of requeueing the
// job into the same refusal again.
func (c *queueRunner) settle(ctx, runCtx context.Context, d Delivery, env *Envelope, herr error, run *observedRun) error {
	log := c.w.log
	if herr == nil {
		return run.settled(d.Ack(ctx), OutcomeAcked, 0, "")
	}
	var (
		deferErr  *DeferError
		decodeErr *DecodeError
		kindErr   *KindError
		ruleErr   *RuleError
	)
	if errors.As(herr, &deferErr) && !IsPermanent(herr) {
		next, cerr := c.nextDeferral(env, deferErr.Delay, herr)
		if cerr != nil {
			// Out of deferrals: dead-lettered without the count, so that
			// a re-drive starts it afresh.
			dead := env.Clone()
			delete(dead.Headers, HeaderDeferrals)
			return c.deadLetter(ctx, runCtx, d, dead, cerr, run)
		}
		err := d.Defer(ctx, next, deferErr.Delay)
		if !refusedWait(err) {
			if err == nil {
				c.loggedDeferral(runCtx, env, deferErr.Delay, deferrals(next))
			}
			return run.settled(err, OutcomeDeferred, deferErr.Delay, "")
		}
		herr = fmt.Errorf("defer for %v refused: %w", deferErr.Delay, err)
	}
	if errors.As(herr, &decodeErr) || errors.As(herr, &kindErr) || errors.As(herr, &ruleErr) || IsPermanent(herr) || env.Attempt >= env.MaxAttempts {
		return c.deadLetter(ctx, runCtx, d, env, herr, run)
	}
	delay := c.queue.RetryDelay(env.Attempt)
	log.WarnContext(runCtx, "queuey: job failed; will retry", "queue", c.queue.Name, "job_id", env.ID, "attempt", env.Attempt, "max_attempts", env.MaxAttempts, "retry_in", delay, "error", herr)
	next := env.Clone()
	next.Attempt++
	next.LastError = truncate(herr.Error())
	err := d.Retry(ctx, next, delay)
	if !refusedWait(err) {
		return run.settled(err, OutcomeRetried, delay, "")
	}
	return c.deadLetter(ctx, runCtx, d, env, fmt.Errorf("retry in %v refused (%v) after: %w", delay, err, herr), run)
}

// refusedWait reports whether err is a backend's refusal of a wait, which
// happens before anything is acked and would happen again on redelivery.
func refusedWait(err error) bool {
	return errors.Is(err, ErrDelayTooLong) || errors.Is(err, ErrUnknownQueue)
}

func (c *queueRunner) deadLetter(ctx, runCtx context.Context, d Delivery, env *Envelope, herr error, run *observedRun) error {
	reason := truncate(herr.Error())
	c.w.log.ErrorContext(runCtx, "queuey: job dead-lettered", "queue", c.queue.Name, "job_id", env.ID, "attempt", env.Attempt, "max_attempts", env.MaxAttempts, slog.String("reason", reason))
	next := env.Clone()
	next.LastError = reason
	return run.settled(d.DeadLetter(ctx, next, reason), OutcomeDeadLettered, 0, reason)
}
