// Package adminapi defines the types of package admin's API: queue
// statistics, dead letters, re-drive and purge results, and their errors.
// Package admin gives each its name by an alias. They live here, below
// both, so that the memory backend in package runtime implements admin's
// interfaces without runtime importing admin, the operators' package.
package adminapi

import (
	"errors"
	"time"
)

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
	// LadderDelay is set when the queue's waits are held on the delay
	// ladder (delay=ladder), whose levels every ladder-mode queue of its
	// type shares: they cannot be counted per queue.
	LadderDelay bool
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
