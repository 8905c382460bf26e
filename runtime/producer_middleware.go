package runtime

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// PublishFunc publishes envelopes a Producer has built, all onto one queue
// with one delay, and returns one error per envelope, nil where it was
// stored. A single enqueue is a call with one envelope; EnqueueMany is one
// call with all of its envelopes.
type PublishFunc func(ctx context.Context, envs []*Envelope, delay time.Duration) []error

// ProducerMiddleware wraps the publishing of every enqueue: for tracing,
// metrics, or headers every job should carry. It may read and change each
// envelope, headers included (Headers may be nil: set a new map), before it
// calls next, and must return one error per envelope. The job IDs callers
// get back are the envelopes' IDs as they were built, so a middleware must
// not change ID.
type ProducerMiddleware func(next PublishFunc) PublishFunc

// Use adds middleware around every later enqueue of p. The first given is
// the outermost; a later Use wraps around earlier ones. Use is safe to call
// while other goroutines enqueue, though enqueues already under way go on
// without the new middleware.
func (p *Producer) Use(mw ...ProducerMiddleware) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.publishFunc()
	for _, m := range slices.Backward(mw) {
		next = m(next)
	}
	p.publish = oneErrorPerJob(next)
}

// oneErrorPerJob turns a middleware's answer of the wrong length into an
// error for every job, so that no job is reported stored when it may not
// be.
func oneErrorPerJob(next PublishFunc) PublishFunc {
	return func(ctx context.Context, envs []*Envelope, delay time.Duration) []error {
		errs := next(ctx, envs, delay)
		if len(errs) == len(envs) {
			return errs
		}
		err := fmt.Errorf("%w: producer middleware returned %d errors for %d jobs; whether they were stored is unknown", ErrInvalidOption, len(errs), len(envs))
		errs = make([]error, len(envs))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
}

// publishFunc returns the chain of middleware around the backend, or the
// backend alone. p.mu must be held.
func (p *Producer) publishFunc() PublishFunc {
	if p.publish != nil {
		return p.publish
	}
	return p.publishBackend
}

// publishBackend is the innermost PublishFunc: it hands envs to the backend,
// in one batch where the backend can keep many publishes in flight
// (BatchPublisher) and the jobs are not delayed, one after another
// otherwise.
func (p *Producer) publishBackend(ctx context.Context, envs []*Envelope, delay time.Duration) []error {
	if len(envs) != 1 {
		if bp, ok := p.backend.(BatchPublisher); ok && delay == 0 {
			return bp.PublishBatch(ctx, envs)
		}
	}
	errs := make([]error, len(envs))
	for i, env := range envs {
		errs[i] = p.backend.Publish(ctx, env, delay)
	}
	return errs
}

// publisher returns what an enqueue publishes through.
func (p *Producer) publisher() PublishFunc {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.publishFunc()
}
