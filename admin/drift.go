package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuey/queuey/runtime"
)

// ArgDiff is one queue argument whose value on the broker is not the one
// the queue's configuration (its //queuey:queue annotation) declares. An
// empty value means the argument is absent there.
type ArgDiff struct {
	Queue  string // the broker queue: the work queue, or its dead-letter queue
	Arg    string // x-max-priority, x-queue-type, ...
	Broker string
	Config string
}

// String says the difference in one phrase: "x-max-priority: broker 3, annotation 8".
func (d ArgDiff) String() string {
	v := func(s string) string {
		if s == "" {
			return "none"
		}
		return s
	}
	return fmt.Sprintf("%s %s: broker %s, annotation %s", d.Queue, d.Arg, v(d.Broker), v(d.Config))
}

// QueueDrift compares a queue's configuration with the queue on the broker.
type QueueDrift struct {
	Queue string
	// Exists is false for a queue not on the broker: nothing to compare.
	Exists bool
	// Diffs are the arguments that differ, of the work queue and then of
	// its dead-letter queue; none when they match.
	Diffs []ArgDiff
	// Migrating says a migration of the queue is under way, or was cut
	// short (queuey queues migrate, run again, finishes it).
	Migrating bool
}

// Summary is the differences in one line, "" when there are none.
func (d QueueDrift) Summary() string {
	parts := make([]string, len(d.Diffs))
	for i, x := range d.Diffs {
		parts[i] = x.String()
	}
	return strings.Join(parts, "; ")
}

// DriftReader compares queues' configurations with the broker's queues.
// A backend that cannot see queue arguments returns an error wrapping
// ErrCannotList.
type DriftReader interface {
	QueueDrift(ctx context.Context, q runtime.QueueConfig) (QueueDrift, error)
}

// ErrNothingToMigrate is returned by a migration of a queue whose
// arguments on the broker are those its configuration declares.
var ErrNothingToMigrate = errors.New("nothing to migrate")

// ErrCannotMigrate is returned by a migration refused before anything was
// changed, or stopped where going on would lose jobs; the error says why.
var ErrCannotMigrate = errors.New("cannot migrate")

// DefaultPauseTimeout is how long a migration waits, by default, for the
// workers of a paused queue to let go of it.
const DefaultPauseTimeout = 30 * time.Second

// MigrateOptions says how to migrate a queue. The zero value migrates,
// waiting DefaultPauseTimeout for workers to let go.
type MigrateOptions struct {
	// DryRun returns the plan and changes nothing.
	DryRun bool
	// PauseTimeout is how long to wait for the queue's workers to let go
	// once it is paused; zero means DefaultPauseTimeout.
	PauseTimeout time.Duration
	// ProducersStopped says no producer publishes to the queue during the
	// migration. A quorum queue cannot be deleted only when empty, so
	// migrating one away is refused without it.
	ProducersStopped bool
	// Progress, when set, is told each step as it starts.
	Progress func(step string)
}

// MigrateResult says what a migration did, or (DryRun) would do.
type MigrateResult struct {
	Queue string
	// Diffs are the arguments changed.
	Diffs []ArgDiff
	// Plan is the steps, in order.
	Plan []string
	// Resumed says a migration cut short before was finished.
	Resumed bool
	// Moved counts the jobs moved into the queue declared anew (those
	// moved out, and those that came in by another route meanwhile);
	// Dead the dead letters likewise.
	Moved, Dead int
}

// Migrator moves a queue's jobs to a queue declared with the arguments
// its configuration declares (queuey queues migrate).
type Migrator interface {
	MigrateQueue(ctx context.Context, q runtime.QueueConfig, opts MigrateOptions) (MigrateResult, error)
}
