// Package topology names every broker queue a logical queue needs and the
// arguments each is declared with. It is pure: no I/O, no broker.
//
// For logical queue q:
//
//	q                  durable; x-max-priority when > 0 (and supported); x-queue-type
//	q.dead             durable (the broker's default type)
//	q.retry.{ttl_ms}   durable classic; x-message-ttl; dead-letters to ""/q; x-expires = 2×ttl
//	q.deferred.{ttl_ms} same as q.retry.{ttl_ms}
package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

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

// QuorumPriorities reports whether quorum queues of this broker accept
// x-max-priority: 4.x has priorities built in, 3.x refuses the argument.
func (v Version) QuorumPriorities() bool { return v.Major >= 4 }

// Work returns the work queue of q. The second result is false when q asks
// for priorities the broker's queue type cannot give (a quorum queue on 3.x):
// x-max-priority is then left out and deferred jobs return in FIFO order.
func Work(q runtime.QueueConfig, broker Version) (Queue, bool) {
	args := amqp.Table{}
	qt := q.QueueType
	if qt == "" {
		qt = runtime.QueueClassic
	}
	args[ArgQueueType] = string(qt)
	prioritiesOK := true
	if q.MaxPriority > 0 {
		if qt == runtime.QueueQuorum && !broker.QuorumPriorities() {
			prioritiesOK = false
		} else {
			args[ArgMaxPriority] = int32(q.MaxPriority)
		}
	}
	return Queue{Name: q.Name, Args: args}, prioritiesOK
}

// Dead returns the dead-letter queue of logical queue name.
func (n Names) Dead(name string) Queue {
	return Queue{Name: name + n.WithDefaults().DeadSuffix, Args: amqp.Table{}}
}

// HoldKind says what a hold queue holds.
type HoldKind int

// Hold queue kinds.
const (
	Retry HoldKind = iota
	Deferred
)

func (k HoldKind) String() string {
	if k == Deferred {
		return "deferred"
	}
	return "retry"
}

// Hold returns the hold queue of logical queue name for a wait of delay,
// rounded up to granularity with runtime.RoundDelay, and the rounded delay.
// A delay above runtime.MaxDeferral after rounding is runtime.ErrDelayTooLong;
// a delay of zero or less has no hold queue and is an error too.
func (n Names) Hold(name string, kind HoldKind, delay, granularity time.Duration) (Queue, time.Duration, error) {
	n = n.WithDefaults()
	d, err := runtime.RoundDelay(delay, granularity)
	if err != nil {
		return Queue{}, 0, fmt.Errorf("%s wait on queue %q: %w", kind, name, err)
	}
	if d <= 0 {
		return Queue{}, 0, fmt.Errorf("%s wait on queue %q: delay %v has no hold queue", kind, name, delay)
	}
	ttl := d.Milliseconds()
	suffix := n.RetrySuffix
	if kind == Deferred {
		suffix = n.DeferredSuffix
	}
	return Queue{
		Name: fmt.Sprintf("%s%s.%d", name, suffix, ttl),
		Args: amqp.Table{
			ArgQueueType:            string(runtime.QueueClassic),
			ArgMessageTTL:           int32(ttl),
			ArgDeadLetterExchange:   "",
			ArgDeadLetterRoutingKey: name,
			ArgExpires:              int32(2 * ttl),
		},
	}, d, nil
}
