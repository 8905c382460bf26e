package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// parkAfter is how long a queue's runner waits for a delivery, with no
// handler running, before it parks: it gives up its goroutine until a
// delivery, a change of the queue's paused state or the worker's shutdown
// wakes it. A queue that idles less than that keeps its goroutine.
const parkAfter = 500 * time.Millisecond

// pausePoll is how often the paused states of parked queues are looked at:
// a pause reaches a parked queue within it, well inside the second a pause
// takes to stop every worker.
const pausePoll = 200 * time.Millisecond

// readyNotifier returns sub's ReadyNotifier when the runner may park
// while consuming it.
func (c *queueRunner) readyNotifier(sub Subscription, pause *pauseGate) ReadyNotifier {
	rn, ok := sub.(ReadyNotifier)
	if !ok || (pause.states != nil && cap(pause.states) == 0) {
		return nil
	}
	return rn
}

// parking is one park of a runner.
type parking struct {
	woke    atomic.Bool
	ready   chan struct{} // closed once every way to wake is registered
	stopCtx func() bool
}

// park gives up the runner's goroutine, its state kept in c.st, until the
// subscription has a delivery or ends, the queue's paused state changes,
// or ctx ends; then a new goroutine goes on with loop. It is the last thing
// a goroutine of the runner does: a wake may come before it returns.
func (c *queueRunner) park(ctx context.Context, rn ReadyNotifier) {
	p := &parking{ready: make(chan struct{})}
	wake := func() {
		if p.woke.CompareAndSwap(false, true) {
			go c.unpark(ctx, rn, p)
		}
	}
	p.stopCtx = context.AfterFunc(ctx, wake)
	c.w.parked.add(c, c.st.gate.states, wake)
	rn.NotifyReady(wake)
	close(p.ready)
}

// unpark undoes p's registrations, all made by then, and goes on with the
// runner's loop. A late call of p's wake (one that raced this) finds it
// woken and does nothing.
func (c *queueRunner) unpark(ctx context.Context, rn ReadyNotifier, p *parking) {
	<-p.ready
	p.stopCtx()
	rn.NotifyReady(nil)
	c.w.parked.remove(c)
	c.loop(ctx)
}

// parkedQueues are a worker's parked queues whose paused state can
// change: one goroutine, while there are any, looks at their states every
// pausePoll and wakes those with a new one waiting.
type parkedQueues struct {
	mu      sync.Mutex
	queues  map[*queueRunner]parkedQueue
	polling bool
	empty   chan struct{} // a remove left none: the poller ends at once
	wg      sync.WaitGroup
}

type parkedQueue struct {
	states <-chan bool
	wake   func()
}

func (p *parkedQueues) add(c *queueRunner, states <-chan bool, wake func()) {
	if states == nil {
		return // the backend cannot pause queues
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queues == nil {
		p.queues = map[*queueRunner]parkedQueue{}
		p.empty = make(chan struct{}, 1)
	}
	p.queues[c] = parkedQueue{states: states, wake: wake}
	if !p.polling {
		p.polling = true
		p.wg.Go(p.poll)
	}
}

func (p *parkedQueues) remove(c *queueRunner) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.queues[c]; !ok {
		return
	}
	delete(p.queues, c)
	if len(p.queues) == 0 {
		select {
		case p.empty <- struct{}{}:
		default:
		}
	}
}

func (p *parkedQueues) poll() {
	t := time.NewTicker(pausePoll)
	defer t.Stop()
	var wakes []func()
	for {
		select {
		case <-t.C:
		case <-p.empty:
		}
		p.mu.Lock()
		if len(p.queues) == 0 {
			p.polling = false
			p.mu.Unlock()
			return
		}
		wakes = wakes[:0]
		for _, q := range p.queues {
			if len(q.states) > 0 {
				wakes = append(wakes, q.wake)
			}
		}
		p.mu.Unlock()
		for _, wake := range wakes {
			wake()
		}
	}
}

// wait waits for the poller to end, which it does once no queue is
// parked.
func (p *parkedQueues) wait() { p.wg.Wait() }
