package runtime

import (
	"context"
	"time"
)

// DeclareConcurrency is declareConcurrency, for tests.
const DeclareConcurrency = declareConcurrency

// WithInfo is withInfo, for tests of what a handler's context carries.
var WithInfo = withInfo

// EnqueuePayload is enqueuePayload, for tests.
func (p *Producer) EnqueuePayload(ctx context.Context, q QueueConfig, payload []byte, opts ...EnqueueOption) (string, error) {
	return p.enqueuePayload(ctx, q, payload, opts...)
}

// EnqueuePayloads is enqueuePayloads, for tests.
func (p *Producer) EnqueuePayloads(ctx context.Context, q QueueConfig, payloads [][]byte, opts ...EnqueueOption) ([]string, error) {
	return p.enqueuePayloads(ctx, q, payloads, opts...)
}

// Register is register, for tests of registrations no job type makes.
func (w *Worker) Register(q QueueConfig, h HandlerFunc) { w.register(q, h, nil) }

// SetMismatchRetries sets mismatchRetries until the test ends.
func SetMismatchRetries(tb interface{ Cleanup(func()) }, ds []time.Duration) {
	old := mismatchRetries
	mismatchRetries = ds
	tb.Cleanup(func() { mismatchRetries = old })
}

// SetPermitWait sets how long w's jobs wait for a permit before they go
// back to their queue unrun (DefaultPermitWait).
func (w *Worker) SetPermitWait(d time.Duration) { w.permitWait = d }
