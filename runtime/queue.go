package runtime

import (
	"errors"
	"fmt"
	"go/token"
	"time"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/internal/rules/waits"
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
	// DelayLadder holds waits on a fixed binary ladder of queues shared by
	// every queue of its queue type: level L holds for 2^L granularities,
	// and a wait passes the levels of its delay's set bits.
	DelayLadder DelayMode = "ladder"
)

// DefaultDelay is the delay mode of a queue of type t that names none, on
// a backend configured with no default of its own: DelayLadder for a
// quorum queue, whose waits need a bounded number of replicated queues
// and stay exact on the ladder, and DelayQueue for any other.
func DefaultDelay(t QueueType) DelayMode {
	if t == QueueQuorum {
		return DelayLadder
	}
	return DelayQueue
}

// Defaults of the QueueConfig fields, which WithDefaults gives each zero
// field and an annotation gives each key it leaves out.
const (
	DefaultPrefetch    = 10
	DefaultMaxPriority = 10
	DefaultMaxAttempts = 5
	DefaultRetryBase   = time.Second
	DefaultRetryMax    = time.Hour
)

// NoPriority, as a QueueConfig's MaxPriority, declares the queue without
// priorities (no x-max-priority): every job on it runs at priority 0, and a
// deferred job returns in FIFO order, behind the backlog. The annotation
// says it with max_priority=0; in a QueueConfig a zero MaxPriority means
// DefaultMaxPriority, as every zero field means its default.
const NoPriority = -1

// Limits of the QueueConfig fields: the largest value each accepts.
const (
	PrefetchLimit    = 65535
	MaxPriorityLimit = 255
	MaxAttemptsLimit = 1000
)

// MaxQueueNameLen is the longest queue name, 235 bytes: AMQP's limit on a
// name, 255 bytes, less the 20 that the longest name a backend derives
// from a queue name adds with default options (RabbitMQ's deferral hold
// queue of the longest wait, "<q>.deferred.2147483647"). So a name that
// validates is one the broker takes with everything named after it.
const MaxQueueNameLen = names.MaxQueue

// QueueConfig is the configuration of one job queue. A zero field means its
// default, as its doc says (WithDefaults applies them), so a literal with
// just a Name is a queue with every default. Generated code declares one
// per annotated job type, its annotation resolved.
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
	// (KindOf).
	Kind string
	// Prefetch is how many unacked deliveries a consumer holds,
	// 1..PrefetchLimit. Zero means DefaultPrefetch.
	Prefetch int
	// Concurrency is how many handlers run at once for this queue in one
	// worker, 1..Prefetch. Zero means Prefetch.
	Concurrency int
	// MaxPriority is the queue's x-max-priority, 1..MaxPriorityLimit: the
	// highest priority a job on it may have, and the one a deferred job
	// returns at, ahead of the backlog. NoPriority declares none. Zero
	// means DefaultMaxPriority.
	MaxPriority int
	// MaxAttempts is how many runs a failing job gets before it is
	// dead-lettered, 1..MaxAttemptsLimit. Zero means DefaultMaxAttempts.
	MaxAttempts int
	// RetryBase is the first retry delay; attempt n waits RetryBase*2^(n-1).
	// Zero means DefaultRetryBase.
	RetryBase time.Duration
	// RetryMax caps the retry delay, at most MaxDeferral rounded down to
	// DefaultGranularity (596h31m23s), so that every retry delay is a wait
	// a backend accepts; a backend with a coarser granularity refuses, at
	// Declare, a RetryMax above MaxDeferral rounded down to its own. Zero
	// means DefaultRetryMax, or RetryBase when that is longer.
	RetryMax time.Duration
	// Timeout is the deadline on each handler run's context. Zero means none.
	Timeout time.Duration
	// QueueType is the RabbitMQ queue type. Empty means QueueClassic.
	QueueType QueueType
	// Delay is how waits are held. Empty means the backend's default, which
	// is DefaultDelay(QueueType) unless the backend is configured otherwise.
	Delay DelayMode
	// DelayExchange names the x-delayed-message exchange with DelayPlugin.
	// Empty means the backend's default, which is "<Name>.delay" unless the
	// backend is configured otherwise.
	DelayExchange string
	// Schedule, when set, is a Schedule.Spec: every worker that handles
	// this queue (Handle, a generated HandleX) also enqueues a job of the
	// zero value at each of its ticks, as Periodic does with a Schedule of
	// this Spec and Missed, named after the queue. Empty means none.
	Schedule string
	// Missed is the Schedule.Missed of Schedule. Empty means
	// MissedRunOnce; it must be empty when Schedule is.
	Missed Missed
	// Limit is how many of this queue's jobs run at once across every
	// worker of the backend (every process on one RabbitMQ vhost),
	// 1..LimitMax. Zero means no limit. See Limiter.
	Limit int
	// Rate is how many of this queue's jobs start per period across every
	// worker of the backend. Zero means no rate limit.
	Rate Rate
	// LimitKey names an exported field of the job, of a string, integer or
	// bool type: at most one job per value of that field runs at once
	// across every worker of the backend ("one at a time per customer").
	// With a Name of at most MaxKeyedQueueNameLen bytes. Empty means none.
	LimitKey string
}

// MaxKeyedQueueNameLen is the longest Name of a queue with a LimitKey:
// each key's lease is named after the queue and the key.
const MaxKeyedQueueNameLen = 173

// DefaultQueueConfig returns the configuration of a queue called name with
// every default: QueueConfig{Name: name}.WithDefaults(), which is also what
// an annotation without keys gives (with the job's Kind). Its Delay is
// empty: the backend's default mode, which is DefaultDelay of the queue's
// type (DelayQueue for this classic queue) unless the backend
// is configured otherwise.
func DefaultQueueConfig(name string) QueueConfig {
	return QueueConfig{Name: name}.WithDefaults()
}

// WithDefaults returns q with every zero field that has a default set to
// it, as each field's doc says; Delay and DelayExchange, whose defaults are
// the backend's, and Missed, whose default the Schedule applies, stay
// empty. It is the one place these defaults are applied; applying it twice
// changes nothing.
func (q QueueConfig) WithDefaults() QueueConfig {
	if q.Prefetch == 0 {
		q.Prefetch = DefaultPrefetch
	}
	if q.Concurrency == 0 {
		q.Concurrency = q.Prefetch
	}
	if q.MaxPriority == 0 {
		q.MaxPriority = DefaultMaxPriority
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

// topPriority is the highest wire priority of q's jobs: its MaxPriority,
// or 0 when it declares no priority. q is resolved (WithDefaults).
func (q QueueConfig) topPriority() uint8 {
	if q.MaxPriority == NoPriority {
		return 0
	}
	return uint8(q.MaxPriority)
}

// describePriority names maxPriority, a resolved MaxPriority, as the
// annotation says it, for messages.
func describePriority(maxPriority int) string {
	if maxPriority == NoPriority {
		return "max_priority=0 (NoPriority)"
	}
	return fmt.Sprintf("max_priority=%d", maxPriority)
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
		bad("Name", fmt.Sprintf("%q", q.Name), names.QueueRuleFor(q.Name))
	case q.Schedule != "" && len(q.Name) > MaxScheduleNameLen:
		bad("Name", fmt.Sprintf("%q", q.Name), fmt.Sprintf("at most %d bytes with a Schedule, which is named after the queue (see Schedule.Name)", MaxScheduleNameLen))
	}
	if q.Prefetch < 1 || q.Prefetch > PrefetchLimit {
		bad("Prefetch", q.Prefetch, fmt.Sprintf("1..%d", PrefetchLimit))
	}
	if q.Concurrency < 1 || q.Concurrency > q.Prefetch {
		bad("Concurrency", q.Concurrency, fmt.Sprintf("1..Prefetch (%d)", q.Prefetch))
	}
	if q.MaxPriority != NoPriority && (q.MaxPriority < 1 || q.MaxPriority > MaxPriorityLimit) {
		bad("MaxPriority", q.MaxPriority, fmt.Sprintf("1..%d, 0 for DefaultMaxPriority (%d), or NoPriority (%d) for none", MaxPriorityLimit, DefaultMaxPriority, NoPriority))
	}
	if q.MaxAttempts < 1 || q.MaxAttempts > MaxAttemptsLimit {
		bad("MaxAttempts", q.MaxAttempts, fmt.Sprintf("1..%d", MaxAttemptsLimit))
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
	case "", DelayQueue, DelayPlugin, DelayLadder:
	default:
		bad("Delay", fmt.Sprintf("%q", q.Delay), `"queue", "plugin" or "ladder"`)
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
	if q.Limit < 0 || q.Limit > LimitMax {
		bad("Limit", q.Limit, fmt.Sprintf("0 (none) or 1..%d", LimitMax))
	}
	if !validRate(q.Rate) {
		bad("Rate", q.Rate, "the zero Rate (none) or "+rateForms)
	}
	switch {
	case q.LimitKey == "":
	case !token.IsIdentifier(q.LimitKey) || !token.IsExported(q.LimitKey):
		bad("LimitKey", fmt.Sprintf("%q", q.LimitKey), "the name of an exported field of the job")
	case len(q.Name) > MaxKeyedQueueNameLen:
		bad("Name", fmt.Sprintf("%q", q.Name), fmt.Sprintf("at most %d bytes with a LimitKey, whose leases are named after the queue", MaxKeyedQueueNameLen))
	}
	return errors.Join(errs...)
}

// kindConflict returns ErrKindConflict when declared and q, two configs of
// one queue name, ask for different job kinds, nil when they agree or
// either leaves Kind empty.
func kindConflict(declared, q QueueConfig) error {
	return errs.KindConflict(q.Name, declared.Kind, q.Kind)
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
