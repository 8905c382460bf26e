// Package workone runs one job through a runtime.Worker's own path (the
// kind check, its middleware and observers, the queue's timeout, the
// outcome the worker makes of the handler's result) with no backend and
// without starting the worker: package queueytest tests a handler at any
// attempt with it, while package runtime offers applications no way to
// run a job but through a backend.
package workone

import (
	"context"
	"time"
)

// How a run was settled.
const (
	Acked        = "acked"
	Requeued     = "requeued"
	Retried      = "retried"
	Deferred     = "deferred"
	DeadLettered = "dead-lettered"
)

// Settled is how a run of Run was settled.
type Settled struct {
	// Outcome is Acked, Requeued, Retried, Deferred or DeadLettered, or
	// "" when the run was not settled (its context ended).
	Outcome string
	// Delay is the wait of a retry or a deferral, rounded up to the
	// backend granularity as the backends round it.
	Delay time.Duration
	// Reason is the error a retried job carries, or the dead letter's
	// reason; "" otherwise.
	Reason string
}

// Run runs env, a *runtime.Envelope, through the handler that w, a
// *runtime.Worker, has registered for queue, as the worker would run it
// on a delivery, and returns how the run was settled. It fails when w has
// no handler for queue, or a registration of w was refused. It neither
// starts w nor keeps it from starting. Package runtime sets Run when it
// is initialised.
var Run func(ctx context.Context, w any, queue string, env any) (Settled, error)
