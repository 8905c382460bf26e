package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/queuey/queuey/internal/names"
	"github.com/queuey/queuey/internal/queueerr"
	"github.com/queuey/queuey/internal/waits"
)

// QueueType is the RabbitMQ queue type of a queue.
type QueueType string

// Queue types.
const (
	QueueClassic QueueType = "classic"
	QueueQuorum  QueueType = "quorum"
)

// DelayMode says how a backend holds waits (retries, deferrals and delayed
// enqueues).
type DelayMode string

// Delay modes.
const (
	// DelayQueue holds each distinct delay in its own hold queue with a
	// queue-level TTL.
	DelayQueue DelayMode = "queue"
	// DelayPlugin holds waits in an x-delayed-message exchange of RabbitMQ's
	// delayed-message-exchange plugin.
	DelayPlugin DelayMode = "plugin"
)

// Defaults of the //queuey:queue annotation. DefaultQueueConfig applies
// them all; in a QueueConfig literal a zero field means what its doc says.
const (
	DefaultPrefetch    = 10
	DefaultMaxPriority = 10
	DefaultMaxAttempts = 5
	DefaultRetryBase   = time.Second
	DefaultRetryMax    = time.Hour
)

// Limits of the QueueConfig fields.
const (
	MaxPrefetch      = 65535
	MaxPriorityLimit = 255
	MaxAttemptsLimit = 1000
	// MaxQueueNameLen is the longest queue name, 235 bytes: AMQP's limit
	// on a name, 255 bytes, less the 20 that the longest name a backend
	// derives from a queue name adds with default options (RabbitMQ's
	// deferral hold queue of the longest wait, "<q>.deferred.2147483647").
	// So a name that validates is one the broker takes with everything
	// named after it.
	MaxQueueNameLen = names.MaxQueue
)

// QueueConfig is the resolved configuration of one job queue. Generated code
// declares one per annotated job type.
type QueueConfig struct {
	// Name is the broker queue name, [A-Za-z0-9._-]+, at most
	// MaxQueueNameLen bytes, and at most MaxScheduleNameLen with a
	// Schedule, which is named after the queue. Required.
	Name string
	// Kind is the Go type of the jobs on this queue as %T prints it: the
	// package name, a dot, the type name (emails.SendEmail). A worker
	// dead-letters a job of another kind without running the handler, and
	// a backend refuses to declare one queue name for two kinds. Enqueue,
	// EnqueueMany, Handle and Periodic refuse a job type of another kind
	// (ErrJobType), and give a config with no Kind their job type's
	// (KindOf). Empty means any kind to the untyped calls (EnqueuePayload,
	// Worker.Register).
	Kind string
	// Prefetch is how many unacked deliveries a consumer holds, 1..65535.
	// Zero means DefaultPrefetch.
	Prefetch int
	// Concurrency is how many handlers run at once for this queue in one
	// worker, 1..Prefetch. Zero means Prefetch.
	Concurrency int
	// MaxPriority is the queue's x-max-priority, 0..255. Zero declares no
	// priority: deferred jobs then return in FIFO order. The annotation's
	// default is DefaultMaxPriority.
	MaxPriority int
	// MaxAttempts is how many runs a failing job gets before it is
	// dead-lettered, 1..1000. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase is the first retry delay; attempt n waits RetryBase*2^(n-1).
	// Zero means DefaultRetryBase.
	RetryBase time.Duration
	// RetryMax caps the retry delay, at most MaxDeferral rounded down to
	// DefaultGranularity (596h31m23s), so that every retry delay is a wait
	// a backend accepts; a backend with a coarser granularity refuses, at
	// Declare, a RetryMax above MaxDeferral rounded down to its own. Zero
	// means DefaultRetryMax.
	RetryMax time.Duration
	// Timeout is the deadline on each handler run's context. Zero means none.
	Timeout time.Duration
	// QueueType is the RabbitMQ queue type. Empty means QueueClassic.
	QueueType QueueType
	// Delay is how waits are held. Empty means the backend's default.
	Delay DelayMode
	// DelayExchange names the x-delayed-message exchange with DelayPlugin.
	// Empty means "<Name>.delay".
	DelayExchange string
	// Schedule, when set, is a Schedule.Spec: every worker that handles
	// this queue (Handle, a generated HandleX) also enqueues a job of the
	// zero value at each of its ticks, as Periodic does with a Schedule of
	// this Spec and Missed, named after the queue. Empty means none.
	Schedule string
	// Missed is the Schedule.Missed of Schedule. Empty means
	// MissedRunOnce; it must be empty when Schedule is.
	Missed Missed
}

// DefaultQueueConfig returns the configuration an annotation without keys
// gives a queue called name. Its Delay is empty: the backend's default mode,
// which is DelayQueue unless the backend is configured otherwise.
func DefaultQueueConfig(name string) QueueConfig {
	return QueueConfig{
		Name:        name,
		Prefetch:    DefaultPrefetch,
		Concurrency: DefaultPrefetch,
		MaxPriority: DefaultMaxPriority,
		MaxAttempts: DefaultMaxAttempts,
		RetryBase:   DefaultRetryBase,
		RetryMax:    DefaultRetryMax,
		QueueType:   QueueClassic,
	}
}

// WithDefaults returns q with every zero field that has a default set to it.
func (q QueueConfig) WithDefaults() QueueConfig {
	if q.Prefetch == 0 {
		q.Prefetch = DefaultPrefetch
	}
	if q.Concurrency == 0 {
		q.Concurrency = q.Prefetch
	}
	if q.MaxAttempts == 0 {
		q.MaxAttempts = DefaultMaxAttempts
	}
	if q.RetryBase == 0 {
		q.RetryBase = DefaultRetryBase
	}
	if q.RetryMax == 0 {
		q.RetryMax = max(DefaultRetryMax, q.RetryBase)
	}
	if q.QueueType == "" {
		q.QueueType = QueueClassic
	}
	return q
}

// Validate reports every field of q (after WithDefaults) that is out of its
// range, naming the field and what is accepted.
func (q QueueConfig) Validate() error {
	q = q.WithDefaults()
	var errs []error
	bad := func(field string, value any, accepted string) {
		errs = append(errs, fmt.Errorf("%w: queue %q: %s = %v, want %s", ErrInvalidConfig, q.Name, field, value, accepted))
	}
	switch {
	case !names.Queue(q.Name):
		bad("Name", fmt.Sprintf("%q", q.Name), names.QueueRule)
	case q.Schedule != "" && len(q.Name) > MaxScheduleNameLen:
		bad("Name", fmt.Sprintf("%q", q.Name), fmt.Sprintf("at most %d bytes with a Schedule, which is named after the queue (see Schedule.Name)", MaxScheduleNameLen))
	}
	if q.Prefetch < 1 || q.Prefetch > MaxPrefetch {
		bad("Prefetch", q.Prefetch, "1..65535")
	}
	if q.Concurrency < 1 || q.Concurrency > q.Prefetch {
		bad("Concurrency", q.Concurrency, fmt.Sprintf("1..Prefetch (%d)", q.Prefetch))
	}
	if q.MaxPriority < 0 || q.MaxPriority > MaxPriorityLimit {
		bad("MaxPriority", q.MaxPriority, "0..255")
	}
	if q.MaxAttempts < 1 || q.MaxAttempts > MaxAttemptsLimit {
		bad("MaxAttempts", q.MaxAttempts, "1..1000")
	}
	if q.RetryBase < 0 {
		bad("RetryBase", q.RetryBase, "a positive duration")
	}
	if q.RetryMax < q.RetryBase {
		bad("RetryMax", q.RetryMax, fmt.Sprintf("at least RetryBase (%v)", q.RetryBase))
	}
	if limit := waits.Longest(DefaultGranularity); q.RetryMax > limit {
		bad("RetryMax", q.RetryMax, fmt.Sprintf("at most %v, MaxDeferral (%v) rounded down to DefaultGranularity: a retry delay is rounded up to the granularity, and a wait above MaxDeferral is refused", limit, MaxDeferral))
	}
	if q.Timeout < 0 {
		bad("Timeout", q.Timeout, "0 (none) or a positive duration")
	}
	switch q.QueueType {
	case QueueClassic, QueueQuorum:
	default:
		bad("QueueType", fmt.Sprintf("%q", q.QueueType), `"classic" or "quorum"`)
	}
	switch q.Delay {
	case "", DelayQueue, DelayPlugin:
	default:
		bad("Delay", fmt.Sprintf("%q", q.Delay), `"queue" or "plugin"`)
	}
	if q.DelayExchange != "" && (!names.Valid(q.DelayExchange) || len(q.DelayExchange) > names.MaxShortString) {
		bad("DelayExchange", fmt.Sprintf("%q", q.DelayExchange), fmt.Sprintf("a name of %s+, at most %d bytes", names.Chars, names.MaxShortString))
	}
	if q.Schedule != "" {
		var se *SpecError
		if _, err := ParseSpec(q.Schedule); errors.As(err, &se) {
			bad("Schedule", fmt.Sprintf("%q (%s)", q.Schedule, se.Reason), specForms)
		}
	}
	switch {
	case q.Missed == "":
	case q.Schedule == "":
		bad("Missed", fmt.Sprintf("%q", q.Missed), "empty when Schedule is")
	case q.Missed != MissedRunOnce && q.Missed != MissedSkip:
		bad("Missed", fmt.Sprintf("%q", q.Missed), fmt.Sprintf("%q or %q", MissedRunOnce, MissedSkip))
	}
	return errors.Join(errs...)
}

// kindConflict returns ErrKindConflict when declared and q, two configs of
// one queue name, ask for different job kinds, nil when they agree or
// either leaves Kind empty.
func kindConflict(declared, q QueueConfig) error {
	return queueerr.KindConflict(q.Name, declared.Kind, q.Kind)
}

// RetryDelay returns how long a job waits after failing run number attempt
// (1-based): RetryBase*2^(attempt-1), capped at RetryMax.
func (q QueueConfig) RetryDelay(attempt int) time.Duration {
	q = q.WithDefaults()
	d := q.RetryBase
	for i := 1; i < attempt; i++ {
		if d >= q.RetryMax/2 {
			return q.RetryMax
		}
		d *= 2
	}
	return min(d, q.RetryMax)
}
