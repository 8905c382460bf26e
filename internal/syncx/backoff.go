// Package syncx holds the small rules of time and concurrency that the
// runtime, the RabbitMQ backend and the outbox relay share: how a delay is
// jittered (Jitter), how a wait gives way to a context that ends (Sleep),
// the check of a done channel (Closed), and events handed to a listener
// that may come later (Notes).
package syncx

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
