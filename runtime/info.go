package runtime

import (
	"context"
	"time"
)

// Info describes the job a handler runs.
type Info struct {
	// ID is the job's ID (see Envelope.ID).
	ID string
	// Queue is the queue the job was delivered from, whose config the
	// worker runs it by.
	Queue string
	// Attempt is the 1-based number of this run; a deferral does not
	// change it.
	Attempt int
	// MaxAttempts is how many runs the job gets.
	MaxAttempts int
	// EnqueuedAt is when the job was first enqueued.
	EnqueuedAt time.Time
	// Headers are the job's headers. Handlers must not modify them.
	Headers map[string]string
}

type infoKey struct{}

// infoContext carries an Info. It is one allocation per run where
// context.WithValue would be two (the context and the boxed Info).
type infoContext struct {
	context.Context
	info Info
}

func (c *infoContext) Value(key any) any {
	if key == (infoKey{}) {
		return &c.info
	}
	return c.Context.Value(key)
}

// withInfo returns ctx carrying info. The worker does this for every run.
func withInfo(ctx context.Context, info Info) context.Context {
	return &infoContext{Context: ctx, info: info}
}

// InfoFromContext returns the Info of the job a handler runs, and false
// outside a handler.
func InfoFromContext(ctx context.Context) (Info, bool) {
	if info, ok := ctx.Value(infoKey{}).(*Info); ok {
		return *info, true
	}
	return Info{}, false
}
