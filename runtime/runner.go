package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// settleRetryDelay is how long a job whose outcome could not be recorded
// waits before it is put back on its queue; it doubles with each failure in
// a row on the queue, up to maxSettleRetryDelay.
const (
	settleRetryDelay    = time.Second
	maxSettleRetryDelay = 30 * time.Second
)

// Resubscribe backoff: a failed subscribe waits between half and all of a
// delay that doubles from resubscribeMin up to resubscribeMax; a
// subscription that ran healthySubscription or longer starts it again from
// resubscribeMin, and the subscribe after it goes at once. The backend's
// own redial waits are in addition, and short too: a consumer is back
// within about a second of its broker accepting connections again.
const (
	resubscribeMin = 50 * time.Millisecond
	resubscribeMax = 250 * time.Millisecond
)

// healthySubscription is how long a subscription must have run for the
// next subscribe to go at once and the backoff to start again from its
// minimum; one that fails sooner backs off, so it cannot spin.
const healthySubscription = time.Second

// jittered returns between half and all of d.
func jittered(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// queueRunner consumes one queue for a Worker.
type queueRunner struct {
	w       *Worker
	queue   QueueConfig
	handler HandlerFunc

	settleFailures atomic.Int64 // settles failed in a row
	orphans        orphanage    // runs whose subscription ended under them
	deferLog       deferLog     // rate of the info lines about deferrals

	// slots bounds the handlers running at once, across the queue's
	// subscriptions: one that failed under running handlers leaves them
	// their slots while the next one starts (see consume).
	slots chan struct{}
	// lingering counts the failed subscriptions whose handlers still run.
	lingering sync.WaitGroup

	done func(error) // called once when the runner ends
	st   runState    // used by the runner's one running goroutine
}

// start runs the queue's consumption until ctx ends, subscribing again
// with backoff when a subscription fails, and then calls done: with an
// error only when the backend was closed or the queue cannot be consumed
// (ErrCannotConsume), as trying again would not help. It runs on one
// goroutine at a time, not always the same: a queue with nothing to
// deliver for a while parks, holding none (see park).
func (c *queueRunner) start(ctx context.Context, done func(error)) {
	c.slots = make(chan struct{}, c.queue.Concurrency)
	c.done = done
	go c.loop(ctx)
}

// runState is what a runner's loop keeps across its goroutines.
type runState struct {
	gate    *pauseGate
	backoff time.Duration
	failing bool         // the last subscribe failed too
	cur     *consumption // the subscription being consumed, if any
}

// loop runs the runner until it ends, calling c.done, or parks.
func (c *queueRunner) loop(ctx context.Context) {
	if c.st.gate == nil {
		gate, err := c.watchPause(ctx)
		if gate == nil {
			c.finish(err)
			return
		}
		c.st = runState{gate: gate, backoff: resubscribeMin}
	}
	rn, err := c.run(ctx)
	if rn != nil {
		c.park(ctx, rn)
		return
	}
	c.finish(err)
}

func (c *queueRunner) finish(err error) {
	c.lingering.Wait()
	c.orphans.abandon()
	c.done(err)
}

// run consumes until ctx ends or the backend is gone, or the queue parks:
// then it returns the subscription's ReadyNotifier to park on.
func (c *queueRunner) run(ctx context.Context) (ReadyNotifier, error) {
	st := &c.st
	for {
		var err error
		if cur := st.cur; cur != nil {
			if rn := c.consume(ctx, cur); rn != nil {
				return rn, nil
			}
			st.cur = nil
			if st.gate.paused {
				st.backoff = resubscribeMin
				continue
			}
			err = cur.sub.Err()
			if ctx.Err() == nil && !errors.Is(err, ErrClosed) && time.Since(cur.began) >= healthySubscription {
				// At once: the backend redials as soon as its broker
				// takes connections again.
				st.backoff = resubscribeMin
				c.w.log.Warn("queuey: consumer stopped; subscribing again", "queue", c.queue.Name, "error", err)
				continue
			}
		} else {
			if !c.waitResumed(ctx, st.gate) {
				return nil, nil
			}
			var sub Subscription
			sub, err = c.subscribe(ctx)
			if err == nil {
				if st.failing {
					c.w.log.Info("queuey: consuming again", "queue", c.queue.Name)
				}
				st.failing = false
				st.cur = c.newConsumption(ctx, sub, st.gate)
				continue
			}
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if errors.Is(err, ErrClosed) || errors.Is(err, ErrCannotConsume) {
			return nil, fmt.Errorf("consume queue %q: %w", c.queue.Name, err)
		}
		wait := jittered(st.backoff)
		if !st.failing {
			c.w.log.Error("queuey: cannot subscribe; trying again", "queue", c.queue.Name, "error", err, "after", wait)
		} else {
			c.w.log.Debug("queuey: cannot subscribe; trying again", "queue", c.queue.Name, "error", err, "after", wait)
		}
		st.failing = true
		if !sleepCtx(ctx, wait) {
			return nil, nil
		}
		st.backoff = min(st.backoff*2, resubscribeMax)
	}
}

// sleepCtx waits d or until ctx ends, and reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

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

// consumption is one subscription a runner consumes.
type consumption struct {
	sub            Subscription
	h              *handlers
	cancelHandlers context.CancelCauseFunc
	began          time.Time
}

// newConsumption prepares the consumption of sub; consume runs it.
func (c *queueRunner) newConsumption(ctx context.Context, sub Subscription, pause *pauseGate) *consumption {
	base, cancelHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	h := &handlers{
		c: c, ctx: ctx, base: base, gate: &settleGate{}, requeues: &timers{},
		sub: sub, pause: pause, paused: make(chan struct{}),
		slots: c.slots,
		done:  make(chan struct{}),
		park:  c.readyNotifier(sub, pause),
	}
	return &consumption{sub: sub, h: h, cancelHandlers: cancelHandlers, began: time.Now()}
}

// consume runs cur's deliveries through at most Concurrency handlers at
// once until ctx ends, the queue is paused or the subscription fails, then
// shuts down; or, when nothing came for parkAfter and no handler runs, it
// returns the ReadyNotifier to park on, and is called again to go on. A
// pause lets in-flight handlers finish however long they take (unless ctx
// ends meanwhile); jobs delivered and not started go back to the queue.
//
// A handler goroutine starts when a delivery comes to consume and a slot
// is free, and goes on with the deliveries that follow, waiting up to
// linger for the next, with its slot, before it ends. So a busy queue's
// goroutines (and the stacks they grew) serve many jobs each, taking them
// straight from the subscription, and an idle queue holds no handler
// goroutine once linger has passed, and no goroutine at all once parked.
func (c *queueRunner) consume(ctx context.Context, cur *consumption) ReadyNotifier {
	h, sub, gate, requeues, cancelHandlers := cur.h, cur.sub, cur.h.gate, cur.h.requeues, cur.cancelHandlers
	why := h.dispatch()
	if why == stopParked {
		return h.park
	}
	finished := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(finished)
	}()
	closeSub := func() {
		cancelHandlers(nil)
		gate.close()
		requeues.stop() // the subscription closes: the broker puts those jobs back
		if err := sub.Close(); err != nil {
			c.w.log.Warn("queuey: close consumer", "queue", c.queue.Name, "error", err)
		}
	}

	switch why {
	case stopEnded:
		// The subscription failed (its channel died: the broker's
		// consumer_timeout, a lost connection) or ended. The handlers
		// still running cannot settle their jobs on it, and the broker
		// delivers those again; the queue must not go without a
		// consumer until they return, however long they take. So run
		// subscribes again at once, while they finish here as orphans
		// (see orphanage): they give their slots of the queue's
		// concurrency back, and their jobs' copies wait for them.
		// A subscription the broker cancelled (its queue deleted) ends
		// with its channel open, and its runs are orphaned too: their
		// deliveries go back as it closes, once they returned, and
		// their copies settle with their outcomes. Left to settle on
		// the open channel instead, a run would run beside its copy
		// if the channel died later (the consumer_timeout still
		// strikes it), which nothing here would see.
		h.orphanRuns()
		select {
		case <-finished:
			closeSub()
			return nil
		default:
		}
		c.lingering.Add(1)
		go func() {
			defer c.lingering.Done()
			select {
			case <-finished:
			case <-ctx.Done():
				c.awaitShutdown(finished, cancelHandlers)
			}
			closeSub()
		}()
		return nil
	case stopPaused:
		c.w.log.Info("queuey: queue paused; jobs running finish, no new ones start", "queue", c.queue.Name)
		h.stop(ctx)
		select {
		case <-finished:
		case <-ctx.Done():
			c.awaitShutdown(finished, cancelHandlers)
		}
	case stopCtx:
		h.stop(ctx)
		c.awaitShutdown(finished, cancelHandlers)
	}
	closeSub()
	return nil
}

// Why dispatch stopped taking deliveries.
const (
	stopCtx    = iota // the worker is shutting down
	stopPaused        // the queue was paused
	stopEnded         // the subscription's deliveries ended
	stopParked        // nothing came for parkAfter: the runner parks
)

// handlers runs the deliveries of one subscription, at most
// cap(slots) at once.
type handlers struct {
	c        *queueRunner
	ctx      context.Context // the worker's: when it ends, no new job starts
	base     context.Context // the handlers'
	gate     *settleGate
	requeues *timers
	sub      Subscription
	pause    *pauseGate    // read by dispatch only
	paused   chan struct{} // closed by dispatch when it reads that the queue is paused
	slots    chan struct{} // one per handler goroutine (running or waiting for its next delivery), and one dispatch holds while it waits for a delivery
	done     chan struct{} // closed when dispatch returns, but to park: waiting goroutines end
	wg       sync.WaitGroup
	park     ReadyNotifier // the subscription's, when the runner may park
	idle     *time.Timer   // parkAfter, while take waits

	mu        sync.Mutex
	runs      map[*runSlot]struct{} // one per handler goroutine
	unstarted []Delivery            // taken from the subscription after the stop began, never run
	drained   bool                  // stop has drained the subscription: keep releases at once
}

// releaseTimeout bounds how long a stopping subscription waits for the
// deliveries still coming to it, and for their releases.
const releaseTimeout = 5 * time.Second

// keep records d, taken from the subscription but not to be run, for stop
// to release; once stop has drained the subscription, it releases d at
// once.
func (h *handlers) keep(d Delivery) {
	h.mu.Lock()
	if !h.drained {
		h.unstarted = append(h.unstarted, d)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	h.release(ctx, d)
}

// takeKept returns the deliveries kept so far and forgets them; with
// drained, later ones are released by keep itself.
func (h *handlers) takeKept(drained bool) []Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.unstarted
	h.unstarted = nil
	h.drained = h.drained || drained
	return kept
}

func (h *handlers) release(ctx context.Context, d Delivery) {
	if err := d.Release(ctx); err != nil && !errors.Is(err, ErrClosed) {
		h.c.w.log.Warn("queuey: release of a job never started failed; it goes back counted as a run", "queue", h.c.queue.Name, "job_id", d.Envelope().ID, "error", err)
	}
}

// stop stops the subscription and releases every delivery no handler
// started: those taken and kept, and those still coming (the broker's
// prefetch). A released job goes back to its queue without a run counted
// against it, so stopping or pausing a worker burns no attempt of a job it
// never ran. Deliveries it cannot release (the subscription did not stop
// in time, or a release failed) stay unsettled and go back when the
// subscription closes, counted as a run.
func (h *handlers) stop(ctx context.Context) {
	c := h.c
	if err := h.sub.Stop(); err != nil {
		c.w.log.Warn("queuey: stop consumer; jobs it fetched and never started go back counted as a run", "queue", c.queue.Name, "error", err)
		return
	}
	// The releases outlive ctx, which ends at shutdown; they are
	// bounded on their own.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	deliveries := h.sub.Deliveries()
	for {
		for _, d := range h.takeKept(false) {
			h.release(rctx, d)
		}
		select {
		case d, ok := <-deliveries:
			if ok {
				h.release(rctx, d)
				continue
			}
			// Handler goroutines that take a delivery as the stream
			// ends release it themselves from now on.
			for _, d := range h.takeKept(true) {
				h.release(rctx, d)
			}
			cancel()
			return
		case <-rctx.Done():
			cancel()
			c.w.log.Warn("queuey: consumer did not stop in time; jobs it fetched and never started go back counted as a run", "queue", c.queue.Name, "timeout", releaseTimeout)
			return
		}
	}
}

// linger is how long a handler goroutine with nothing to do waits for the
// next delivery before it ends: long enough to bridge the gaps of a busy
// queue, where a new goroutine per burst would grow a new stack each time,
// and short enough that an idle queue soon holds none.
const linger = 250 * time.Millisecond

// dispatch takes a slot, then a delivery, and starts a handler goroutine
// on it, until ctx ends, the queue is paused or the deliveries end. A slot
// is taken first, so a delivery not started stays with the subscription,
// which puts it back when it closes. It follows the queue's paused state
// itself, meanwhile, so that a queue holds no goroutine for it.
func (h *handlers) dispatch() (why int) {
	defer func() {
		if why != stopParked {
			close(h.done)
		}
	}()
	deliveries := h.sub.Deliveries()
	var ended <-chan struct{} // watched while every slot is taken
	if en, ok := h.sub.(EndNotifier); ok {
		ended = en.Ended()
	}
	for {
		select {
		case <-h.ctx.Done():
			return stopCtx
		case s, ok := <-h.pause.states:
			if h.pausedNow(s, ok) {
				return stopPaused
			}
			continue
		case <-ended:
			return stopEnded
		case h.slots <- struct{}{}:
		}
		d, got := h.take(deliveries)
		if got != taken {
			<-h.slots
			return got
		}
		if h.ctx.Err() != nil {
			h.keep(d)
			<-h.slots
			return stopCtx
		}
		// The slot is registered before its goroutine starts, so that an
		// end of the subscription from now on reaches it (orphanRuns).
		slot := h.newRunSlot()
		h.wg.Add(1)
		go h.run(slot, d)
	}
}

// taken is what take returns with a delivery.
const taken = -1

// take waits, holding a slot, for a delivery, and returns it and taken,
// or why dispatch stops: stopParked when the runner may park and nothing
// came for parkAfter while no handler ran.
func (h *handlers) take(deliveries <-chan Delivery) (Delivery, int) {
	var idle <-chan time.Time
	if h.park != nil {
		if h.idle == nil {
			h.idle = time.NewTimer(parkAfter)
		} else {
			h.idle.Reset(parkAfter)
		}
		defer h.idle.Stop()
		idle = h.idle.C
	}
	for {
		select {
		case <-h.ctx.Done():
			return nil, stopCtx
		case s, ok := <-h.pause.states:
			if h.pausedNow(s, ok) {
				return nil, stopPaused
			}
		case d, ok := <-deliveries:
			if !ok {
				return nil, stopEnded
			}
			return d, taken
		case <-idle:
			if len(h.slots) == 1 { // dispatch's own: no handler runs
				return nil, stopParked
			}
			h.idle.Reset(parkAfter)
		}
	}
}

// pausedNow takes a state of the queue's paused watch and, when the queue
// is paused, tells the handler goroutines (closing paused) and reports
// true.
func (h *handlers) pausedNow(s, ok bool) bool {
	h.pause.read(s, ok)
	if h.pause.paused {
		close(h.paused)
		return true
	}
	return false
}

// run handles d, then the deliveries that follow, holding the slot
// dispatch took for d. When none is waiting it waits up to linger for the
// next, still holding the slot, and ends (giving the slot back) if none
// comes, or when dispatch returns, the worker stops or the queue pauses.
// A delivery it takes then is handed to it straight from the
// subscription, without a hop through dispatch.
func (h *handlers) run(slot *runSlot, d Delivery) {
	defer h.wg.Done()
	defer h.dropRunSlot(slot)
	deliveries := h.sub.Deliveries()
	var wait *time.Timer
	defer func() {
		if wait != nil {
			wait.Stop()
		}
	}()
	for {
		h.c.process(h.base, h.gate, h.requeues, slot, d)
		var (
			next Delivery
			ok   bool
		)
		select {
		case next, ok = <-deliveries:
		default:
			if wait == nil {
				wait = time.NewTimer(linger)
			} else {
				wait.Reset(linger)
			}
			select {
			case next, ok = <-deliveries:
			case <-wait.C:
				return
			case <-h.done: // dispatch returned: ctx ended, a pause, or no more deliveries
				return
			}
		}
		if !ok {
			return
		}
		if h.ctx.Err() != nil || isClosed(h.paused) {
			h.keep(next)
			return
		}
		d = next
	}
}

// awaitShutdown waits for in-flight handlers up to the shutdown timeout,
// then cancels them.
func (c *queueRunner) awaitShutdown(finished <-chan struct{}, cancelHandlers context.CancelCauseFunc) {
	t := time.NewTimer(c.w.shutdownTimeout)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		c.w.log.Warn("queuey: shutdown timeout passed; unfinished jobs will be delivered again", "queue", c.queue.Name, "timeout", c.w.shutdownTimeout)
		c.w.timedOut.Store(true)
		cancelHandlers(ErrShutdownTimeout)
	}
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// process runs one delivery's handler and settles it by the outcome. slot,
// when not nil, is the handler goroutine's, through which the run may be
// orphaned.
func (c *queueRunner) process(base context.Context, gate *settleGate, requeues *timers, slot *runSlot, d Delivery) {
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
	err := c.call(ctx, env)
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
	ctx := WithInfo(base, Info{
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
