// Package topology names every broker queue a logical queue needs and the
// arguments each is declared with. It is pure: no I/O, no broker.
//
// For logical queue q:
//
//	q                  durable; x-queue-type; x-max-priority on a classic queue, unless runtime.NoPriority;
//	                   dead-letters to ""/q.dead (DeadLettered)
//	q.dead             durable (the broker's default type); quorum when q is
//	q.retry.{ttl_ms}   durable classic; x-message-ttl; dead-letters to ""/q; x-expires (HoldExpires)
//	q.deferred.{ttl_ms} same as q.retry.{ttl_ms}
//
// A quorum q has quorum hold queues instead (QuorumHold): at-least-once
// dead-lettering, no x-expires, and TTLs on a bounded set of rungs
// (QuorumRung). A q whose waits go on the delay ladder (delay=ladder) has
// no hold queues: the ladder of its type (Ladder, ladder.go) holds them.
package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// Queue argument names.
const (
	ArgQueueType            = "x-queue-type"
	ArgMaxPriority          = "x-max-priority"
	ArgMessageTTL           = "x-message-ttl"
	ArgExpires              = "x-expires"
	ArgDeadLetterExchange   = "x-dead-letter-exchange"
	ArgDeadLetterRoutingKey = "x-dead-letter-routing-key"
)

// Default suffixes.
const (
	DefaultRetrySuffix    = ".retry"
	DefaultDeferredSuffix = ".deferred"
	DefaultDeadSuffix     = ".dead"
)

// Queue is one broker queue: its name and declare arguments. Every queue is
// durable, non-exclusive and not auto-deleted.
type Queue struct {
	Name string
	Args amqp.Table
}

// Names holds the suffixes of the queues beside a logical queue. Zero fields
// mean the defaults.
type Names struct {
	RetrySuffix    string
	DeferredSuffix string
	DeadSuffix     string
}

// WithDefaults returns n with empty suffixes set to the defaults.
func (n Names) WithDefaults() Names {
	if n.RetrySuffix == "" {
		n.RetrySuffix = DefaultRetrySuffix
	}
	if n.DeferredSuffix == "" {
		n.DeferredSuffix = DefaultDeferredSuffix
	}
	if n.DeadSuffix == "" {
		n.DeadSuffix = DefaultDeadSuffix
	}
	return n
}

// Version is a broker version, as its server properties report it.
type Version struct {
	Major, Minor, Patch int
}

// ParseVersion parses "3.10.8" (a suffix such as "+rc.1" or "-beta" on the
// last part is ignored). It fails on anything without a numeric major.
func ParseVersion(s string) (Version, error) {
	var v Version
	parts := strings.SplitN(s, ".", 3)
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		p = strings.TrimFunc(p, func(r rune) bool { return r < '0' || r > '9' })
		if end := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
			p = p[:end]
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			if i == 0 {
				return Version{}, fmt.Errorf("broker version %q: no numeric major", s)
			}
			break
		}
		*nums[i] = n
	}
	return v, nil
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// QuorumPriorities reports whether quorum queues of this broker order by
// priority. RabbitMQ 4.x quorum queues have two priority levels built in
// (0-4 normal, 5 and above high) and take no x-max-priority; 3.x quorum
// queues have no priorities at all. Neither accepts x-max-priority.
func (v Version) QuorumPriorities() bool { return v.Major >= 4 }

// QuorumHighPriority is the lowest message priority a RabbitMQ 4.x quorum
// queue delivers ahead of normal ones.
const QuorumHighPriority = 5

// Priorities says how a work queue orders what it holds by priority.
type Priorities int

const (
	// PrioritiesAsAsked: x-max-priority as the config asks, or no
	// priorities asked for (runtime.NoPriority).
	PrioritiesAsAsked Priorities = iota
	// PrioritiesNone: a quorum queue of RabbitMQ 3.x, which has none;
	// deferred jobs return in FIFO order.
	PrioritiesNone
	// PrioritiesTooLow: a quorum queue of RabbitMQ 4.x whose max_priority
	// is below QuorumHighPriority, so a deferral (which travels at
	// max_priority) is a normal-priority message and returns in FIFO
	// order.
	PrioritiesTooLow
	// PrioritiesTwoLevels: a quorum queue of RabbitMQ 4.x with max_priority
	// of QuorumHighPriority or more: deferrals return ahead of the
	// backlog, but the queue has two levels, not max_priority+1.
	PrioritiesTwoLevels
)

// Work returns the work queue of q, a resolved config
// (runtime.QueueConfig.WithDefaults), and how it orders by priority. A
// quorum queue never gets x-max-priority, whatever the broker's version:
// 3.x refuses it, and 4.x quorum queues have their priorities built in and
// refuse it too.
func Work(q runtime.QueueConfig, broker Version) (Queue, Priorities) {
	args := amqp.Table{ArgQueueType: string(q.QueueType)}
	prio := PrioritiesAsAsked
	switch {
	case q.MaxPriority == runtime.NoPriority:
	case q.QueueType != runtime.QueueQuorum:
		args[ArgMaxPriority] = int32(q.MaxPriority)
	case !broker.QuorumPriorities():
		prio = PrioritiesNone
	case q.MaxPriority < QuorumHighPriority:
		prio = PrioritiesTooLow
	default:
		prio = PrioritiesTwoLevels
	}
	return Queue{Name: q.Name, Args: args}, prio
}

// Dead returns the dead-letter queue of logical queue name.
func (n Names) Dead(name string) Queue {
	return Queue{Name: name + n.WithDefaults().DeadSuffix, Args: amqp.Table{}}
}

// Hold returns the hold queue of logical queue name for a wait of delay,
// rounded up to granularity with waits.Round, and the rounded delay.
// A delay above runtime.MaxDeferral after rounding is runtime.ErrDelayTooLong;
// a delay of zero or less has no hold queue and is an error too.
func (n Names) Hold(name string, kind admin.HoldKind, delay, granularity time.Duration) (Queue, time.Duration, error) {
	return n.hold(name, kind, delay, granularity, waits.Round, func(ttl int64) amqp.Table { return classicHoldArgs(name, ttl) })
}

// classicHoldArgs are the arguments of a classic hold queue of logical
// queue name whose TTL is ttl milliseconds.
func classicHoldArgs(name string, ttl int64) amqp.Table {
	return amqp.Table{
		ArgQueueType:            string(runtime.QueueClassic),
		ArgMessageTTL:           int32(ttl),
		ArgDeadLetterExchange:   "",
		ArgDeadLetterRoutingKey: name,
		ArgExpires:              HoldExpires(ttl),
	}
}

// HoldMargin is the least time by which a classic hold queue's expiry
// (x-expires) outlasts the TTL of a message published into it.
const HoldMargin = time.Second

// HoldExpires is the x-expires, in milliseconds, of a classic hold queue
// whose TTL is ttl milliseconds: twice the TTL, and at least the TTL plus
// HoldMargin. The expiry is renewed by the declare sent right before each
// publish into the queue, and the message leaves the queue one TTL after
// it entered, so the margin is what the broker has to take the publish
// and run the message's TTL timer before the queue expires: one TTL is a
// lot for a wait of an hour and nothing for a wait of a few milliseconds,
// where the broker's timers run late by about as much. An idle hold queue
// deletes itself one TTL, or HoldMargin, after its last use. It is up to
// 2^32-2 (past int32) for the longest TTL, runtime.MaxDeferral.
func HoldExpires(ttl int64) int64 {
	return ttl + max(ttl, HoldMargin.Milliseconds())
}

// hold returns the hold queue of name of kind for delay, rounded with
// round, and declared with args of its TTL in milliseconds.
func (n Names) hold(name string, kind admin.HoldKind, delay, granularity time.Duration, round func(d, g time.Duration) (time.Duration, error), args func(ttl int64) amqp.Table) (Queue, time.Duration, error) {
	n = n.WithDefaults()
	d, err := round(delay, granularity)
	if err != nil {
		return Queue{}, 0, fmt.Errorf("%s wait on queue %q: %w", kind, name, err)
	}
	if d <= 0 {
		return Queue{}, 0, fmt.Errorf("%s wait on queue %q: delay %v has no hold queue", kind, name, delay)
	}
	ttl := d.Milliseconds()
	return Queue{Name: n.holdName(name, kind, ttl), Args: args(ttl)}, d, nil
}

// HoldOf returns the hold queue of q for a wait of delay, rounded up to
// granularity: a quorum one on the bounded ladder of QuorumRung when q is a
// quorum queue, so that waits are replicated like q, and a classic one
// otherwise.
func (n Names) HoldOf(q runtime.QueueConfig, kind admin.HoldKind, delay, granularity time.Duration) (Queue, error) {
	if q.QueueType == runtime.QueueQuorum {
		h, _, err := n.QuorumHold(q.Name, kind, delay, granularity)
		return h, err
	}
	h, _, err := n.Hold(q.Name, kind, delay, granularity)
	return h, err
}

// maxTTLDigits is how many digits the longest hold queue TTL has, in
// milliseconds: runtime.MaxDeferral.
var maxTTLDigits = len(strconv.FormatInt(runtime.MaxDeferral.Milliseconds(), 10))

// LongestHoldName is the longest name a hold queue of logical queue name
// can have: the longer suffix and the longest TTL.
func (n Names) LongestHoldName(name string) string {
	n = n.WithDefaults()
	suffix := n.RetrySuffix
	if len(n.DeferredSuffix) > len(suffix) {
		suffix = n.DeferredSuffix
	}
	return name + suffix + "." + strings.Repeat("9", maxTTLDigits)
}

// holdName names the hold queue of logical queue name, of kind, with a TTL
// of ttl milliseconds: "<name><suffix>.<ttl>". n has its defaults set.
func (n Names) holdName(name string, kind admin.HoldKind, ttl int64) string {
	suffix := n.RetrySuffix
	if kind == admin.HoldDeferred {
		suffix = n.DeferredSuffix
	}
	return fmt.Sprintf("%s%s.%d", name, suffix, ttl)
}

// DeadLettered returns work dead-lettering into the queue named dead
// through the default exchange, so that what the broker dead-letters on
// its own (a quorum queue's delivery limit, a reject without requeue) lands
// there instead of being dropped.
func DeadLettered(work Queue, dead string) Queue {
	args := make(amqp.Table, len(work.Args)+2)
	for k, v := range work.Args {
		args[k] = v
	}
	args[ArgDeadLetterExchange] = ""
	args[ArgDeadLetterRoutingKey] = dead
	return Queue{Name: work.Name, Args: args}
}

// WithoutDeadLettering returns work without the arguments DeadLettered
// adds: the shape of a work queue declared before it had them.
func WithoutDeadLettering(work Queue) Queue {
	args := make(amqp.Table, len(work.Args))
	for k, v := range work.Args {
		if k != ArgDeadLetterExchange && k != ArgDeadLetterRoutingKey {
			args[k] = v
		}
	}
	return Queue{Name: work.Name, Args: args}
}

// MigratingSuffix ends the name of the queue that holds a queue's jobs
// while the queue is declared again with other arguments (queuey queues
// migrate): "orders.migrating". Its existence says a migration of the
// queue is under way, or was cut short and is to be run again.
const MigratingSuffix = ".migrating"

// Migrating returns the name of the queue that holds the jobs of queue
// name while it is migrated.
func Migrating(name string) string { return name + MigratingSuffix }

// Want returns work queue q as the backend declares it on a broker of
// version v: Work, dead-lettering into dead unless dead is empty, and
// v.Unlimited.
func Want(q runtime.QueueConfig, v Version, dead string) Queue {
	w, _ := Work(q, v)
	if dead != "" {
		w = DeadLettered(w, dead)
	}
	return v.Unlimited(w)
}
