package runtime

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuey/queuey/internal/rules/waits"
)

// DefaultGranularity is the default wait granularity: every delay is rounded
// up to a multiple of it, which bounds how many hold queues exist.
const DefaultGranularity = waits.DefaultGranularity

// MaxDeferral is the longest wait a backend accepts, (2^32-1) ms / 2,
// about 24.8 days: a hold queue's x-expires is twice its TTL, and an
// x-expires of 2^32-1 ms is what RabbitMQ is known to take. It is also
// within the delayed-message plugin's x-delay limit, 2^31-1 ms. A wait is
// first rounded up to the backend's granularity, so the longest accepted
// is MaxDeferral rounded down to it: 596h31m23s at DefaultGranularity.
const MaxDeferral = waits.MaxDeferral

// Backend is for backend implementers: the contract by which envelopes
// travel between producers and workers. Application code only makes one
// (NewMemoryBackend, rabbitmq.Dial), hands it to NewProducer and
// NewWorker, and closes it. Implementations must be safe for concurrent
// use. Every publish returns only once the job is safely stored (for
// RabbitMQ: confirmed by the broker) and is an error when the job could
// not be routed.
type Backend interface {
	// Declare makes queue q exist with its arguments, and the queues it
	// needs beside it (such as its dead-letter queue). It is idempotent. A
	// queue that exists with other arguments is ErrQueueMismatch, naming
	// the queue; one declared through this backend for another job kind is
	// ErrKindConflict.
	Declare(ctx context.Context, q QueueConfig) error
	// Publish stores env on env.Queue, at once when delay is zero or after
	// delay, rounded up to the backend's granularity. A wait onto a queue
	// neither declared through this backend nor told to it (WaitTargeter)
	// is ErrUnknownQueue; one above MaxDeferral is ErrDelayTooLong.
	Publish(ctx context.Context, env *Envelope, delay time.Duration) error
	// Consume starts delivering q's jobs, holding at most q.Prefetch
	// unsettled deliveries at once. q must have been declared.
	Consume(ctx context.Context, q QueueConfig) (Subscription, error)
	// Close releases the backend: subscriptions end, and what it owns
	// (connections, timers) is let go. Calls after Close fail with
	// ErrClosed. Close is safe to call twice.
	Close() error
	// Logger returns the logger the backend reports to, never nil.
	// Workers over the backend log there too (see Worker), so that one
	// logger, given where the backend is made, receives every record.
	Logger() *slog.Logger
}

// Subscription is for backend implementers: a running consumer of one
// queue, which Backend.Consume returns to a worker.
type Subscription interface {
	// Deliveries yields the queue's jobs. It is closed after Stop, Close or
	// a failure of the backend; Err then says which.
	Deliveries() <-chan Delivery
	// Stop asks for no more deliveries. Deliveries already handed out can
	// still be settled until Close.
	Stop() error
	// Close ends the subscription. Deliveries not settled by then go back
	// to the queue and are delivered again. Close is safe to call twice.
	Close() error
	// Err is nil while the subscription runs or after a Stop or Close, and
	// the failure that closed Deliveries otherwise.
	Err() error
}

// Delivery is for backend implementers: one job a Subscription hands to a
// worker. Exactly one of the settling methods should succeed. Those that
// publish (Retry, Defer, DeadLetter) publish first and settle second, and
// leave the delivery unsettled when the publish fails, so that a job is
// never lost, at worst delivered again.
type Delivery interface {
	// Envelope is the job. The caller may modify the returned value.
	Envelope() *Envelope
	// Ack settles the delivery as done.
	Ack(ctx context.Context) error
	// Requeue puts the delivery back on its queue unchanged, to be
	// delivered again; the delivery counts as a run that did not finish.
	Requeue(ctx context.Context) error
	// Release gives back a delivery that no handler started (a worker
	// stopping or pausing took it from the subscription but never ran
	// it): it goes back to its queue without counting a run, so its next
	// delivery is not taken for a redelivery of a crashed run. It may go
	// back behind jobs that came after it.
	Release(ctx context.Context) error
	// Retry publishes next to come back to its queue after delay at
	// next.Priority, then acks this delivery. The wait is delay rounded up
	// to the backend's granularity, and at least one granularity.
	Retry(ctx context.Context, next *Envelope, delay time.Duration) error
	// Defer publishes next to come back to its queue after delay ahead of
	// the queue's backlog (at the queue's maximum priority), then acks. The
	// wait is delay rounded up to the backend's granularity, and at least
	// one granularity, even for a delay of zero or less.
	Defer(ctx context.Context, next *Envelope, delay time.Duration) error
	// DeadLetter moves next to the queue's dead-letter queue with reason,
	// then acks; a backend without dead-letter queues rejects instead.
	DeadLetter(ctx context.Context, next *Envelope, reason string) error
}
