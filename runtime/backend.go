package runtime

import (
	"context"
	"log/slog"
	"time"

	"github.com/queuey/queuey/internal/waits"
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

// DeadLetterNotifier is for backend implementers: an optional capability
// of a Subscription that dead-letters some messages itself, never handing
// them to the worker: a message that is not a valid envelope (poison), or
// a job delivered again past its max_attempts. A worker with observers
// asks for them, so that its observers are told of each such message too
// (a Start, then OutcomeDeadLettered); a worker without says so, with a
// nil fn, as soon as it subscribed.
type DeadLetterNotifier interface {
	// NotifyDeadLettered arranges for fn to be called once for each
	// message the subscription moved to the dead-letter queue (or
	// rejected) itself, once that is settled; also, at once, for those it
	// moved before NotifyDeadLettered was called (the subscription keeps
	// up to MaxUnnotifiedDeadLetters of them). fn is quick and must not
	// call the backend. A nil fn says that no listener will come: the
	// subscription drops those it kept and keeps none after.
	NotifyDeadLettered(fn func(DeadLetter))
}

// DeadLetter is one message a subscription dead-lettered itself: the job,
// or for poison an Envelope with the queue, the queue's kind and the
// message's ID (empty when it had none); and the reason.
type DeadLetter struct {
	Env    *Envelope
	Reason string
}

// MaxUnnotifiedDeadLetters is how many dead-lettered messages a
// subscription keeps for a NotifyDeadLettered to come.
const MaxUnnotifiedDeadLetters = 1024

// EndNotifier is for backend implementers: an optional capability of a
// Subscription whose deliveries can end while every handler slot is
// taken, as when the broker closes the channel under a long run. A worker
// waiting for a free slot watches Ended, so that it consumes again at once
// instead of when a handler returns.
type EndNotifier interface {
	// Ended is closed once Deliveries is closed, whatever the reason.
	Ended() <-chan struct{}
}

// OrphanCheck is for backend implementers: it reports whether env is a
// job whose run goes on, or returned, in the worker that consumes, though
// the delivery it ran from was lost (its subscription ended under it: see
// docs/guarantees.md, Long jobs). The copy the backend delivers again of
// such a job is no new attempt: the worker settles it with the run's
// outcome. A backend that counts redeliveries as attempts (and
// dead-letters past max_attempts) asks first, and hands such a copy to
// the worker as it came, uncounted. It is quick and safe to call from any
// goroutine, with the backend's locks held.
type OrphanCheck func(env *Envelope) bool

type orphanCheckKey struct{}

// WithOrphanCheck returns a context for Backend.Consume that carries
// check; a worker consumes with one.
func WithOrphanCheck(ctx context.Context, check OrphanCheck) context.Context {
	return context.WithValue(ctx, orphanCheckKey{}, check)
}

// OrphanCheckFrom returns the OrphanCheck ctx carries, or nil. A backend
// reads it in Consume, and its subscription keeps it for its life.
func OrphanCheckFrom(ctx context.Context) OrphanCheck {
	check, _ := ctx.Value(orphanCheckKey{}).(OrphanCheck)
	return check
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

// WaitTargeter is for backend implementers: an optional capability beside
// Backend, of backends that need a queue's config to hold a wait (a
// delayed enqueue) onto it: RabbitMQ picks the hold queues or the delay
// exchange by the queue's type and delay mode. A producer that did not
// declare a queue calls TargetWaits with the caller's config before its
// first delayed enqueue onto it. TargetWaits checks that the queue
// exists, declares nothing of the queue, and remembers its config for
// waits; a queue that does not exist is ErrUnknownQueue, naming it.
type WaitTargeter interface {
	TargetWaits(ctx context.Context, q QueueConfig) error
}

// BatchPublisher is for backend implementers: an optional capability
// beside Backend, of backends that can keep many publishes of one caller
// in flight at once. PublishBatch stores each envelope on its queue at
// once (no delay) and returns one error per envelope, nil where it was
// stored. Producers use it for EnqueueMany; without it they publish one
// envelope after another.
type BatchPublisher interface {
	PublishBatch(ctx context.Context, envs []*Envelope) []error
}
