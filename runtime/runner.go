package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queuey/queuey/internal/syncx"
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

// queueRunner consumes one queue for a Worker.
type queueRunner struct {
	w       *Worker
	queue   QueueConfig
	handler HandlerFunc
	// limiter holds the queue's global limits, nil when it has none;
	// keyOf reads a job's limit key, nil when it has no LimitKey.
	limiter Limiter
	keyOf   func(payload []byte) (string, bool)
	// halt ends once the shutdown timeout has passed since the worker's
	// context ended: handlers and the subscriptions' stops and closes
	// have until then.
	halt context.Context

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
		wait := syncx.Jitter(st.backoff)
		if !st.failing {
			c.w.log.Error("queuey: cannot subscribe; trying again", "queue", c.queue.Name, "error", err, "after", wait)
		} else {
			c.w.log.Debug("queuey: cannot subscribe; trying again", "queue", c.queue.Name, "error", err, "after", wait)
		}
		st.failing = true
		if !syncx.Sleep(ctx, wait) {
			return nil, nil
		}
		st.backoff = min(st.backoff*2, resubscribeMax)
	}
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
	waitCtx, endWait := context.WithCancel(ctx)
	h := &handlers{
		c: c, ctx: ctx, base: base, gate: &settleGate{}, requeues: &timers{},
		waitCtx: waitCtx, endWait: endWait,
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
		// A subscription lost (ErrClosed) was reported by its backend.
		if err := c.closeSub(sub); err != nil && !errors.Is(err, ErrClosed) {
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

// stopSub stops sub, giving a ContextStopper the time stopBound leaves.
func (c *queueRunner) stopSub(sub Subscription) error {
	if cs, ok := sub.(ContextStopper); ok {
		ctx, cancel := c.stopBound()
		defer cancel()
		return cs.StopContext(ctx)
	}
	return sub.Stop()
}

// closeSub closes sub, giving a ContextStopper the time stopBound leaves.
func (c *queueRunner) closeSub(sub Subscription) error {
	if cs, ok := sub.(ContextStopper); ok {
		ctx, cancel := c.stopBound()
		defer cancel()
		return cs.CloseContext(ctx)
	}
	return sub.Close()
}

// stopBound is the context a stop or a close of a subscription waits on
// the backend in: it ends with c.halt (the shutdown timeout passed since
// the worker's context ended) and at the latest one shutdown timeout from
// now, so that the stop of a paused queue, which no shutdown bounds, does
// not wait on a broker that never answers for ever.
func (c *queueRunner) stopBound() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.halt, c.w.shutdownTimeout)
}

// awaitShutdown waits for in-flight handlers until the shutdown timeout
// has passed since the worker's context ended, then cancels them.
func (c *queueRunner) awaitShutdown(finished <-chan struct{}, cancelHandlers context.CancelCauseFunc) {
	select {
	case <-finished:
	case <-c.halt.Done():
		// A stop that waited on a silent broker until halt ended finds
		// both ready: handlers that finished meanwhile left nothing
		// behind, whichever case the select picked.
		if syncx.Closed(finished) {
			return
		}
		c.w.log.Warn("queuey: shutdown timeout passed; unfinished jobs will be delivered again", "queue", c.queue.Name, "timeout", c.w.shutdownTimeout)
		c.w.timedOut.Store(true)
		cancelHandlers(ErrShutdownTimeout)
	}
}
