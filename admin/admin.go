package admin

import (
	"context"
	"errors"
	"time"
)

// Inspector is implemented by backends that let operators look at queues
// and dead letters without changing them: the command line and a dashboard
// are built on it. It is an optional capability beside runtime.Backend.
type Inspector interface {
	// Queues returns the logical queues the backend can find, sorted by
	// name. A backend that cannot list what other processes made returns
	// what it knows and says what it could not see in an error wrapping
	// ErrCannotList, with the names it did find.
	Queues(ctx context.Context) ([]string, error)
	// QueueStats returns the statistics of each queue, in the order given.
	// A queue that does not exist is runtime.ErrUnknownQueue, naming it,
	// unless its dead letters outlived it: then its stats count them and
	// Missing says so.
	QueueStats(ctx context.Context, queues ...Queue) ([]QueueStats, error)
	// DeadLetters returns a page of queue's dead letters, oldest first,
	// without removing any.
	DeadLetters(ctx context.Context, queue string, page DeadLetterPage) (DeadLetterList, error)
	// DeadLetter returns the dead letter of queue with job ID id, without
	// removing it, or an error wrapping ErrDeadLetterNotFound.
	DeadLetter(ctx context.Context, queue, id string) (DeadLetterInfo, error)
}

// Queue is a logical queue whose statistics Inspector.QueueStats is asked
// for. Only Name is required. The other fields are the queue's
// configuration, as the application declares it (runtime.QueueConfig, or
// the queue's //queuey:queue annotation); a backend that cannot list hold
// queues (RabbitMQ without its management API) finds the queue's retry
// hold queues by them, and says what it could not count.
type Queue struct {
	// Name is the logical queue.
	Name string
	// MaxAttempts, RetryBase and RetryMax are the queue's retry schedule,
	// as in runtime.QueueConfig. Zero MaxAttempts means the schedule is not
	// known: no retry hold queue is looked for by it; zero RetryBase or
	// RetryMax is the runtime's default.
	MaxAttempts         int
	RetryBase, RetryMax time.Duration
	// Quorum is set for a quorum queue (queue_type=quorum), whose hold
	// queues are named for the rungs of their own ladder of delays.
	Quorum bool
	// PluginDelay is set when the queue's waits are held by the RabbitMQ
	// delayed-message-exchange plugin (delay=plugin), which cannot count
	// them.
	PluginDelay bool
}

// DeadLetterAdmin is implemented by backends that can put dead letters back
// to work and delete them. It is an optional capability beside
// runtime.Backend.
type DeadLetterAdmin interface {
	// RedriveDeadLetters puts the dead letters of queue that sel selects
	// back on queue, each with a fresh attempt count (Attempt 1) and the
	// re-drive recorded in HeaderRedrives and HeaderRedrivenAt. Each is
	// published (and confirmed) before it is removed from the dead letters,
	// so an interruption at any point duplicates a job at worst and never
	// loses one. Poison letters (no valid envelope) are refused and kept,
	// each with PoisonRefusal as its reason in the result. When queue no
	// longer exists the call fails with runtime.ErrUnknownQueue and every
	// letter stays. progress, if not nil, is called after each letter moved
	// or refused. When ctx ends midway, what was moved so far is reported
	// with ctx's error.
	RedriveDeadLetters(ctx context.Context, queue string, sel DeadLetterSelector, progress func(RedriveProgress)) (RedriveResult, error)
	// PurgeDeadLetters deletes the dead letters of queue that sel selects
	// (poison letters included) and reports how many.
	PurgeDeadLetters(ctx context.Context, queue string, sel DeadLetterSelector) (PurgeResult, error)
}

// Pauser is implemented by backends that can pause a queue for every
// worker of every process using the backend, and keep it paused across
// worker restarts until it is resumed. While a queue is paused, workers
// take none of its jobs (those they are running finish), enqueues go on
// and jobs accumulate. It is an optional capability beside
// runtime.Backend; workers watch it when their backend implements it.
type Pauser interface {
	// PauseQueue pauses queue. Pausing a paused queue does nothing more. A
	// queue that does not exist is runtime.ErrUnknownQueue.
	PauseQueue(ctx context.Context, queue string) error
	// ResumeQueue resumes queue. Resuming a queue that is not paused does
	// nothing.
	ResumeQueue(ctx context.Context, queue string) error
	// Paused reports whether queue is paused.
	Paused(ctx context.Context, queue string) (bool, error)
	// WatchPaused sends whether queue is paused now, then each change,
	// until ctx ends; then it closes the channel. Only the latest state
	// waits in the channel: a reader that falls behind misses states in
	// between, never the last. Workers use it to stop and start consuming.
	WatchPaused(ctx context.Context, queue string) (<-chan bool, error)
}

// ReadyCounter is implemented by backends that can tell how many jobs wait
// ready on a queue: not handed to a consumer, not held in a wait. It serves
// monitoring and tests.
type ReadyCounter interface {
	Ready(ctx context.Context, queue string) (int, error)
}

var (
	// ErrDeadLetterNotFound is returned when no dead letter has the ID
	// asked for.
	ErrDeadLetterNotFound = errors.New("queuey: no such dead letter")
	// ErrCannotList is wrapped by errors about what a backend cannot see,
	// such as hold queues made by other processes when the RabbitMQ
	// management API is not reachable.
	ErrCannotList = errors.New("queuey: cannot list")
	// ErrEmptySelector is returned by RedriveDeadLetters and
	// PurgeDeadLetters for a selector that selects nothing: say All, or
	// give IDs, a reason or a kind.
	ErrEmptySelector = errors.New("queuey: empty dead-letter selector")
)
