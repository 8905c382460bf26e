package runtime

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queuey/queuey/internal/syncx"
)

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
	// waitCtx bounds the waits for permits (see permit): it ends with ctx,
	// at a pause, or when dispatch returns but to park (endWait).
	waitCtx context.Context
	endWait context.CancelFunc
	idle    *time.Timer // parkAfter, while take waits

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
	if err := c.stopSub(h.sub); err != nil {
		if !errors.Is(err, ErrClosed) { // lost: its backend said so once
			c.w.log.Warn("queuey: stop consumer; jobs it fetched and never started go back counted as a run", "queue", c.queue.Name, "error", err)
		}
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
			h.endWait()
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
		h.endWait()
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
		p, granted := h.permit(d)
		if !granted {
			return
		}
		if p != nil && (h.ctx.Err() != nil || syncx.Closed(h.paused)) {
			// Granted as the worker stopped or the queue paused: no new
			// run begins now.
			p.Release()
			h.keep(d)
			return
		}
		h.c.process(h.base, h.gate, h.requeues, slot, d, p)
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
		if h.ctx.Err() != nil || syncx.Closed(h.paused) {
			h.keep(next)
			return
		}
		d = next
	}
}
