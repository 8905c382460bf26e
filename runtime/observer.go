package runtime

import (
	"context"
	"time"
)

// OutcomeKind says what became of one run of a job.
type OutcomeKind int

const (
	// OutcomeAcked: the handler succeeded and the job is done.
	OutcomeAcked OutcomeKind = iota + 1
	// OutcomeRetried: the run failed and the job comes back after
	// Outcome.Delay as attempt Attempt+1.
	OutcomeRetried
	// OutcomeDeferred: the handler returned Defer and the job comes back
	// after Outcome.Delay, at the same attempt.
	OutcomeDeferred
	// OutcomeDeadLettered: the job is in its dead-letter queue with
	// Outcome.Reason (or rejected, on a backend without dead-letter
	// queues).
	OutcomeDeadLettered
	// OutcomeRequeued: the run's outcome could not be recorded
	// (Outcome.SettleErr says why), so the job was put back on its queue
	// unchanged, to run again.
	OutcomeRequeued
	// OutcomeAbandoned: the job was left unsettled (shutdown timeout,
	// consumer gone, or a requeue that failed too); the backend delivers it
	// again. Outcome.SettleErr says why, when there was an error.
	OutcomeAbandoned
	// OutcomeRedelivered is not a settled outcome but an event before a
	// run: the backend says this delivery is a redelivery of one that was
	// never settled (its consumer crashed or lost its connection). The
	// run's settled outcome follows as usual. Backends report it through
	// Redelivery.
	OutcomeRedelivered
)

var outcomeNames = [...]string{
	OutcomeAcked:        "acked",
	OutcomeRetried:      "retried",
	OutcomeDeferred:     "deferred",
	OutcomeDeadLettered: "dead_lettered",
	OutcomeRequeued:     "requeued",
	OutcomeAbandoned:    "abandoned",
	OutcomeRedelivered:  "redelivered",
}

// String returns the kind's lower-case name, such as "dead_lettered".
func (k OutcomeKind) String() string {
	if k > 0 && int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return "unknown"
}

// Settled reports whether k ends a run: every kind but OutcomeRedelivered.
// Each run an Observer is told Start of gets exactly one settled outcome.
func (k OutcomeKind) Settled() bool { return k != OutcomeRedelivered }

// Outcome is what an Observer is told about one run of a job.
type Outcome struct {
	Kind OutcomeKind
	// Queue, JobID and JobKind name the job.
	Queue   string
	JobID   string
	JobKind string
	// Attempt is the 1-based number of the run, MaxAttempts how many runs
	// the job gets.
	Attempt     int
	MaxAttempts int
	// Delay is the requested wait of a retry or deferral, before the
	// backend rounds it up to its granularity; zero otherwise.
	Delay time.Duration
	// Reason is the dead-letter reason of OutcomeDeadLettered.
	Reason string
	// Err is the handler's error (a panic included); nil when it
	// succeeded, and for OutcomeRedelivered.
	Err error
	// SettleErr is why the outcome could not be recorded, for
	// OutcomeRequeued and OutcomeAbandoned.
	SettleErr error
	// QueueLatency is the time from the job's first enqueue (EnqueuedAt) to
	// the start of this run: for a retried or deferred job it includes its
	// earlier runs and waits. Zero when the envelope has no EnqueuedAt.
	QueueLatency time.Duration
	// HandlerDuration is how long the handler (with its middleware) ran;
	// zero for OutcomeRedelivered.
	HandlerDuration time.Duration
}

// Observer is told when each run of a job starts and what became of it:
// the outcomes that worker middleware cannot see, since they are decided
// after the handler returns. Calls come from the worker's handler
// goroutines, concurrently; an Observer must be safe for that and quick.
type Observer interface {
	// Start is called before the handler runs, with the context the run
	// would get. The context it returns is the handler's (and its
	// middleware's), and the one Outcome is called with: the place for a
	// span. Return ctx itself to add nothing. Start must not modify env.
	// env's Queue and Kind are those the run's Outcome carries: the
	// queue's name, and the job's kind or, when it names none, the
	// queue's.
	Start(ctx context.Context, env *Envelope) context.Context
	// Outcome is called once with the run's settled outcome, after the
	// backend recorded it, and before that with OutcomeRedelivered when the
	// delivery is a redelivery.
	Outcome(ctx context.Context, o Outcome)
}

// WithObserver adds observers of every run's outcome. They are told in the
// order given.
func WithObserver(obs ...Observer) WorkerOption {
	return func(w *Worker) { w.observers = append(w.observers, obs...) }
}
