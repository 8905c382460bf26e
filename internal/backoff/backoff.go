// Package backoff holds the rules of waiting between tries that the
// runtime, the RabbitMQ backend and the outbox relay share: how a delay is
// jittered, and how a wait gives way to a context that ends.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter returns between half and all of d, at random, so that clients
// that failed together do not try again together.
func Jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d or until ctx ends, and reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
