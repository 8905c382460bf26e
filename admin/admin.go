package admin

import (
	"context"

	"github.com/queuey/queuey/runtime"
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
// worker; see runtime.Pauser, which workers watch.
type Pauser = runtime.Pauser

// ReadyCounter is implemented by backends that can tell how many jobs wait
// ready on a queue: not handed to a consumer, not held in a wait. It serves
// monitoring and tests.
type ReadyCounter interface {
	Ready(ctx context.Context, queue string) (int, error)
}

// LadderAdmin is implemented by backends that hold waits on delay ladders
// (delay=ladder): it counts each ladder's waits, and lists and puts back
// the waits that reached the end of a ladder after their queue was
// deleted. It is an optional capability beside runtime.Backend. A backend
// without ladders returns none.
type LadderAdmin interface {
	// Ladders returns the delay ladders on the broker, sorted by name,
	// each with the count of its waits and of its unrouted waits. A
	// backend that cannot list what other processes made returns the
	// ladders it could find and says what it could not see in an error
	// wrapping ErrCannotList.
	Ladders(ctx context.Context) ([]LadderStats, error)
	// UnroutedWaits returns the unrouted waits sel selects, of every
	// ladder, oldest first within a ladder, without removing any.
	UnroutedWaits(ctx context.Context, sel UnroutedSelector) ([]UnroutedWait, error)
	// RedriveUnrouted puts each unrouted wait sel selects back on its
	// queue, if that queue exists now: published as it was (priority,
	// message ID, headers and body), less the headers the broker added on
	// the ladder (x-death and the like), straight onto the queue, since
	// its time has come. Each is published, mandatory, and confirmed
	// before it is removed from the unrouted queue, so an interruption
	// duplicates a job at worst and never loses one. The waits of a queue
	// that does not exist stay, in Stayed. progress, if not nil, is called
	// after each wait moved or left. When ctx ends midway, what was moved
	// so far is reported with ctx's error.
	RedriveUnrouted(ctx context.Context, sel UnroutedSelector, progress func(UnroutedProgress)) (UnroutedRedriveResult, error)
}
