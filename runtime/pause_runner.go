package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuey/queuey/internal/syncx"
)

// pauseGate follows one queue's paused state for its runner.
type pauseGate struct {
	states  <-chan bool // nil when the backend cannot pause queues
	paused  bool
	started bool // the first state was read
}

// watchPause starts following queue's paused state when the backend is an
// Pauser, trying again with backoff until it can: a worker must not consume
// a queue before it knows the queue is not paused. It returns nil when ctx
// ends first, and an error when the backend was closed.
func (c *queueRunner) watchPause(ctx context.Context) (*pauseGate, error) {
	p, ok := c.w.backend.(Pauser)
	if !ok {
		return &pauseGate{}, nil
	}
	wait := resubscribeMin
	for {
		states, err := p.WatchPaused(ctx, c.queue.Name)
		if err == nil {
			return &pauseGate{states: states}, nil
		}
		if ctx.Err() != nil {
			return nil, nil
		}
		if errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("watch queue %q: %w", c.queue.Name, err)
		}
		c.w.log.Error("queuey: cannot read whether the queue is paused; not consuming it until then", "queue", c.queue.Name, "error", err, "after", wait)
		if !syncx.Sleep(ctx, wait) {
			return nil, nil
		}
		wait = min(wait*2, 5*time.Second)
	}
}

// read takes one state; a closed channel means the watch ended (with ctx
// or the backend) and the queue counts as not paused from then on.
func (g *pauseGate) read(s bool, ok bool) {
	if !ok {
		g.states = nil
		s = false
	}
	g.paused = s
}

// waitResumed blocks while the queue is paused, calling onPaused first if
// it is, and reports false when ctx ends first. Its first call reads the state the watch starts with, so
// nothing is consumed before the state is known.
func (g *pauseGate) waitResumed(ctx context.Context, onPaused func()) bool {
	if !g.started && g.states != nil {
		g.started = true
		select {
		case <-ctx.Done():
			return false
		case s, ok := <-g.states:
			g.read(s, ok)
		}
	}
	if g.paused {
		onPaused()
	}
	for g.paused {
		select {
		case <-ctx.Done():
			return false
		case s, ok := <-g.states:
			g.read(s, ok)
		}
	}
	return ctx.Err() == nil
}

// waitResumed waits, logging it, while the queue is paused.
func (c *queueRunner) waitResumed(ctx context.Context, g *pauseGate) bool {
	waited := false
	ok := g.waitResumed(ctx, func() {
		waited = true
		c.w.log.Info("queuey: queue paused; waiting for it to be resumed", "queue", c.queue.Name)
	})
	if ok && waited {
		c.w.log.Info("queuey: queue resumed; consuming again", "queue", c.queue.Name)
	}
	return ok
}
