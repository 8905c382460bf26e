package topology

import (
	"math/bits"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// Quorum queue arguments.
const (
	ArgDeadLetterStrategy = "x-dead-letter-strategy"
	ArgOverflow           = "x-overflow"
	// AtLeastOnce is the dead-letter strategy that keeps a message in its
	// quorum queue until the target queue has confirmed it (RabbitMQ 3.10+).
	AtLeastOnce = "at-least-once"
	// RejectPublish is the overflow behaviour at-least-once dead-lettering
	// needs.
	RejectPublish = "reject-publish"
)

// ladderExact is how many granularity steps the quorum ladder keeps
// exact: waits up to ladderExact granularities are held as long as classic
// ones.
const ladderExact = 8

// QuorumRung returns the wait a quorum hold queue holds a delay of d for:
// d rounded up to granularity (waits.Round), then up to the next
// rung of a ladder. The rungs, in granularities, are 1..8, then four per
// doubling: 10, 12, 14, 16, 20, 24, 28, 32, 40, ..., and last the longest
// whole number of granularities within runtime.MaxDeferral. So a wait is
// never shorter than asked, and at most a quarter (plus one granularity)
// longer; and however many distinct delays are asked for, a queue has at
// most QuorumRungs(granularity) hold queues of each kind.
//
// Why a ladder: quorum queues cannot clean themselves up the classic way.
// Their x-expires is not renewed by a redeclare, so an idle-expiry
// could delete a hold queue with jobs in it, and queue.delete with
// if-empty is refused (540 NOT_IMPLEMENTED, closing the connection), so a
// janitor could only delete by a count read earlier, racing a publish.
// With a bounded set of rungs nothing needs deleting, and nothing waiting
// can be dropped.
func QuorumRung(d, granularity time.Duration) (time.Duration, error) {
	r, err := waits.Round(d, granularity)
	if err != nil || r <= 0 {
		return r, err
	}
	if granularity <= 0 {
		granularity = runtime.DefaultGranularity
	}
	u := int64(r / granularity)
	top := int64(waits.Longest(granularity) / granularity)
	return time.Duration(min(ladderUp(u), top)) * granularity, nil
}

// ladderUp returns the smallest rung at or above u (u >= 1).
func ladderUp(u int64) int64 {
	if u <= ladderExact {
		return u
	}
	// Above 8 the rungs between 2^(k+2) and 2^(k+3) are 2^k apart: four
	// per doubling.
	step := int64(1) << (bits.Len64(uint64(u-1)) - 3)
	return (u + step - 1) / step * step
}

// QuorumRungs returns every rung of the quorum ladder for granularity, in
// ascending order: the most hold queues of one kind a quorum queue can
// have.
func QuorumRungs(granularity time.Duration) []time.Duration {
	if granularity <= 0 {
		granularity = runtime.DefaultGranularity
	}
	top := int64(waits.Longest(granularity) / granularity)
	var rungs []time.Duration
	for u := int64(1); u <= top; u = ladderUp(u) + 1 {
		rungs = append(rungs, time.Duration(min(ladderUp(u), top))*granularity)
	}
	return rungs
}

// QuorumHold returns the quorum hold queue of logical queue name for a wait
// of delay, and the wait it holds (QuorumRung): a quorum queue with
// x-message-ttl that dead-letters to ""/name at least once, so an expired
// message leaves it only once name has it, and with no x-expires, since
// its number is bounded by the ladder instead. A delay above
// runtime.MaxDeferral after rounding is runtime.ErrDelayTooLong; a delay of
// zero or less has no hold queue and is an error too.
func (n Names) QuorumHold(name string, kind admin.HoldKind, delay, granularity time.Duration) (Queue, time.Duration, error) {
	return n.hold(name, kind, delay, granularity, QuorumRung, func(ttl int64) amqp.Table { return quorumHoldArgs(name, ttl) })
}

// quorumHoldArgs are the arguments of a quorum hold queue of logical queue
// name whose TTL is ttl milliseconds.
func quorumHoldArgs(name string, ttl int64) amqp.Table {
	return amqp.Table{
		ArgQueueType:            string(runtime.QueueQuorum),
		ArgMessageTTL:           int32(ttl),
		ArgDeadLetterExchange:   "",
		ArgDeadLetterRoutingKey: name,
		ArgDeadLetterStrategy:   AtLeastOnce,
		ArgOverflow:             RejectPublish,
	}
}

// QuorumHolds returns the names of every hold queue, of both kinds, a
// quorum queue name can have with granularity: one per rung.
func (n Names) QuorumHolds(name string, granularity time.Duration) []string {
	n = n.WithDefaults()
	rungs := QuorumRungs(granularity)
	names := make([]string, 0, 2*len(rungs))
	for _, kind := range []admin.HoldKind{admin.HoldRetry, admin.HoldDeferred} {
		for _, r := range rungs {
			names = append(names, n.holdName(name, kind, r.Milliseconds()))
		}
	}
	return names
}

// QuorumDead returns the dead-letter queue of a quorum queue name: quorum
// too, so dead jobs are replicated like the work.
func (n Names) QuorumDead(name string) Queue {
	q := n.Dead(name)
	q.Args[ArgQueueType] = string(runtime.QueueQuorum)
	return q
}

// ArgDeliveryLimit is a quorum queue's delivery limit: how many times a
// message may go back to the queue unsettled (a nack or reject with
// requeue, a consumer's channel or connection closing with it unacked)
// before the broker dead-letters it, or drops it where the queue has no
// dead-letter target. A policy's delivery-limit sets it too, and the lower
// of the two applies.
const ArgDeliveryLimit = "x-delivery-limit"

// NoDeliveryLimit is the x-delivery-limit that turns a RabbitMQ 4.x quorum
// queue's delivery limit off. RabbitMQ 3.x reads it otherwise: there a
// negative limit dead-letters a message on its first return, so it is
// never declared on 3.x, whose quorum queues have no limit unless one is
// set.
const NoDeliveryLimit = -1

// DefaultDeliveryLimit4 is the delivery limit of a RabbitMQ 4.x quorum
// queue declared without one, and under no policy that sets one.
const DefaultDeliveryLimit4 = 20

// DefaultDeliveryLimit reports whether quorum queues of this broker have
// a delivery limit when none is asked for: RabbitMQ 4.x's is
// DefaultDeliveryLimit4.
func (v Version) DefaultDeliveryLimit() bool { return v.Major >= 4 }

// Unlimited returns q as it is declared on a broker of version v: a quorum
// queue of RabbitMQ 4.x with x-delivery-limit = NoDeliveryLimit, so that
// the broker never dead-letters or drops what queuey counts itself (a
// job's attempts) or keeps (a dead letter); any other queue unchanged.
func (v Version) Unlimited(q Queue) Queue {
	if !v.DefaultDeliveryLimit() || q.Args[ArgQueueType] != string(runtime.QueueQuorum) {
		return q
	}
	if _, set := q.Args[ArgDeliveryLimit]; set {
		return q
	}
	args := make(amqp.Table, len(q.Args)+1)
	for k, val := range q.Args {
		args[k] = val
	}
	args[ArgDeliveryLimit] = int32(NoDeliveryLimit)
	return Queue{Name: q.Name, Args: args}
}
