package runtime

import (
	"context"
	"time"
)

// Leaser is for backend implementers: an optional capability beside
// Backend, of backends that can elect one holder of a named lease among
// every process using the backend, hand the lease to another contender
// when its holder dies, and keep one timestamp with it. Worker schedules
// (Periodic) are built on it: the holder fires the ticks and the
// timestamp is the last tick it fired. Both backends of this module
// implement it.
type Leaser interface {
	// AcquireLease joins the contest for the lease called name and blocks
	// until the caller holds it, ctx ends (ctx's error) or the backend
	// fails. A holder keeps the lease until it calls Release, its
	// backend closes, or (RabbitMQ) its connection is lost.
	AcquireLease(ctx context.Context, name string) (HeldLease, error)
}

// HeldLease is for backend implementers: a lease its caller holds, as
// Leaser.AcquireLease returns it.
type HeldLease interface {
	// Mark is the timestamp stored with the lease by the last Advance of
	// any holder, zero when none has stored one.
	Mark() time.Time
	// Advance stores mark with the lease, durably (on RabbitMQ: confirmed
	// by the broker) before it returns nil; the lease stays held. A failed
	// Advance may have stored mark or not; the lease may then be lost too.
	Advance(ctx context.Context, mark time.Time) error
	// Lost is closed when the lease is no longer held: after Release, or
	// when the backend closed or lost the connection it was held on.
	Lost() <-chan struct{}
	// Release gives the lease up for another contender. It is safe to call
	// twice.
	Release() error
}
