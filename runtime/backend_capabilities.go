package runtime

import (
	"context"
)

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

// ContextStopper is for backend implementers: an optional capability of
// a Subscription whose Stop and Close wait for a broker's answer. A worker
// calls StopContext and CloseContext in their place, with a context that
// ends once its shutdown timeout, counted from the end of Run's context,
// is spent: a busy broker has all that time to answer, and one that
// answers nothing holds the worker no longer. A worker that stops without
// shutting down (a paused queue) gives a context that ends one shutdown
// timeout after the stop began, or sooner if the shutdown comes. Either
// returns an error wrapping ErrClosed when the
// subscription was lost by a failure its backend reports itself (a
// connection it dropped for many subscriptions at once, say), which the
// worker does not log again.
type ContextStopper interface {
	StopContext(ctx context.Context) error
	CloseContext(ctx context.Context) error
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

// ReadyNotifier is for backend implementers: a Subscription that can tell
// when a delivery is waiting. A worker then holds no goroutine of its own
// for a queue that has had nothing to deliver for a while: it parks the
// queue, and the call wakes it. (It parks a queue only when the queue's
// paused states, if the backend is a Pauser, come on a buffered
// channel, which it looks at meanwhile.)
type ReadyNotifier interface {
	// NotifyReady arranges for fn to be called once, from any goroutine,
	// as soon as Deliveries has a delivery waiting or is closed; at once
	// (possibly before NotifyReady returns) if it has or is already. A
	// later call replaces an fn not called yet, and nil clears it. fn
	// does not block.
	NotifyReady(fn func())
}

// Redelivery is for backend implementers: an optional capability beside
// Delivery, of deliveries that can tell whether they are a redelivery of a
// job that was handed out before and never settled; the worker then tells
// its observers OutcomeRedelivered before the run. The memory and RabbitMQ
// backends' deliveries implement it. A backend that turns a redelivered
// message into a new one (republished with its attempt raised, say)
// should report true for the delivery of that new message, since that is
// the one the worker sees.
type Redelivery interface {
	// Redelivered reports whether the job was handed out before and never
	// settled.
	Redelivered() bool
}
