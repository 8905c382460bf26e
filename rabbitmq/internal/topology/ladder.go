package topology

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// A delay ladder (delay=ladder) holds the waits of every queue of one queue
// type on a fixed set of levels, whatever the delays. For type T and
// granularity g, with P = "queuey.ladder.<T>.<g>ms":
//
//	P.LL        L = 00..N-1: a topic exchange, and a queue of T with
//	            x-message-ttl = 2^L·g that dead-letters to exchange P.(L-1)
//	            (P.deliver for L = 0), keeping the routing key
//	P.deliver   topic exchange, alternate-exchange = P.unrouted
//	P.unrouted  fanout exchange, and a queue of T bound to it: waits whose
//	            queue is gone
//	P.enter     direct exchange that binds each level queue by its level,
//	            "LL" ("LLh" for P.LL.hi): the way in of this package's own
//	            waits (Ladder.Enter)
//
// A wait's routing key is N words "0" or "1", the delay in granularities
// most significant bit first, then the queue's name. Exchange P.LL routes
// a key whose bit L is 1 to queue P.LL and one whose bit L is 0 down to
// exchange P.(L-1) (P.00's to P.deliver); a wait is published to the
// exchange of its highest set bit, so it always lands in a level queue, and
// passes one level queue per set bit: it waits exactly its delay. Every
// queue of a ladder-mode queue binds P.deliver with N "*" words and its own
// name's words, which matches the keys of its waits and nobody else's.
// What P.deliver cannot route (its queue was deleted) goes to P.unrouted.
//
// The workers publish their own waits through P.enter instead of P.LL
// (Ladder.Enter): the same routing key, and the AMQP header BCC naming
// the level queue the wait enters by its enter key. P.enter routes the
// BCC key to that queue and the routing key nowhere, and the broker takes
// the header off the message, so the same message lands in the same
// queue as through P.LL. A direct exchange matches a key in one lookup,
// where a topic exchange walks its trie word by word, and a wait's key
// has N+1 words or more: on 3.10.8 a publish through P.LL took the broker
// about 100µs more (bench BenchmarkLadderRoute). The BCC key stays among
// the message's routing keys when it is dead-lettered, and matches
// nothing below: it is one word, never "0", "1" or "h", and every binding
// of the levels and of P.deliver needs at least two words.
//
// A quorum queue of RabbitMQ 4.x holds messages of priority 5 and above
// ahead of the others, and expires them in that order: a level queue
// holding both would hold a due wait of normal priority until the high
// ones entered after it expire, up to the level's TTL. A quorum ladder on
// 4.x (Ladder.Split) so has, beside each level queue, P.LL.hi: a queue of
// the same TTL and dead-letter exchange for the waits of high priority,
// whose set bits are written "h" instead of "1". Exchange P.LL routes bit
// "h" to P.LL.hi; each level queue holds one priority class, in the order
// it entered, and a wait keeps its own priority to its queue.

// ArgAlternateExchange is an exchange's alternate exchange: where it sends
// what none of its bindings match.
const ArgAlternateExchange = "alternate-exchange"

// Ladder is the delay ladder of one queue type and granularity.
type Ladder struct {
	Type        runtime.QueueType
	Granularity time.Duration
	Levels      int // N: waits.Levels(Granularity)
	// Split is set when the ladder holds waits of high priority
	// (HighPriority and above) in level queues of their own: a quorum
	// ladder on a broker whose quorum queues have priorities (4.x).
	Split bool

	prefix string // Prefix, made once by NewLadder: every wait names its levels
}

// HighPriority is the least priority that a RabbitMQ 4.x quorum queue
// holds ahead of the others: a split ladder holds waits of HighPriority
// and above apart.
const HighPriority = 5

// NewLadder returns the ladder of queue type t and granularity g
// (runtime.DefaultGranularity when zero or less) on a broker of version v.
func NewLadder(t runtime.QueueType, g time.Duration, v Version) Ladder {
	if g <= 0 {
		g = runtime.DefaultGranularity
	}
	if t == "" {
		t = runtime.QueueClassic
	}
	return Ladder{
		Type: t, Granularity: g, Levels: waits.Levels(g), Split: t == runtime.QueueQuorum && v.QuorumPriorities(),
		prefix: ladderPrefix(t, g),
	}
}

// Prefix is the start of every name of the ladder,
// "queuey.ladder.<type>.<g>ms".
func (l Ladder) Prefix() string {
	if l.prefix != "" {
		return l.prefix
	}
	return ladderPrefix(l.Type, l.Granularity)
}

func ladderPrefix(t runtime.QueueType, g time.Duration) string {
	return names.LadderPrefix + string(t) + "." + strconv.FormatInt(g.Milliseconds(), 10) + "ms"
}

// Level names level L's exchange and queue, "<prefix>.LL".
func (l Ladder) Level(level int) string { return l.Prefix() + "." + twoDigits(level) }

// twoDigits writes n, at least zero, in at least two digits: %02d.
func twoDigits(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// HighLevel names the queue of level L's waits of high priority on a split
// ladder, "<prefix>.LL.hi".
func (l Ladder) HighLevel(level int) string { return l.Level(level) + ".hi" }

// Deliver names the exchange that the last level dead-letters to and every
// ladder-mode queue is bound to.
func (l Ladder) Deliver() string { return l.Prefix() + ".deliver" }

// EnterExchange names the direct exchange that routes the workers' own
// waits to the level queue they enter (Enter).
func (l Ladder) EnterExchange() string { return l.Prefix() + ".enter" }

// EnterKey is the binding key of the queue of level on EnterExchange: the
// level in two digits, "LL", and "LLh" for its high-priority queue. One
// word that is never "0", "1" or "h", so that among a wait's routing keys
// it matches no binding of the levels or of Deliver.
func (l Ladder) EnterKey(level int, high bool) string {
	if high {
		return twoDigits(level) + "h"
	}
	return twoDigits(level)
}

// Unrouted names the fanout exchange, alternate exchange of Deliver, and
// the queue bound to it, that take the waits whose queue is gone.
func (l Ladder) Unrouted() string { return l.Prefix() + ".unrouted" }

// TTL is the time a message waits in level's queue: 2^level granularities.
func (l Ladder) TTL(level int) time.Duration { return time.Duration(1<<level) * l.Granularity }

// LevelQueue returns the queue of level, as a broker of version v takes
// it: of the ladder's type, x-message-ttl = TTL(level), dead-lettering to
// the exchange of the level below (Deliver for level 0) with the message's
// own routing key. A quorum level dead-letters at least once (so a wait
// leaves it only once the next hop has it) and has no delivery limit on
// 4.x. No x-expires: a level holds other queues' waits at any time.
func (l Ladder) LevelQueue(level int, v Version) Queue {
	next := l.Deliver()
	if level > 0 {
		next = l.Level(level - 1)
	}
	args := amqp.Table{
		ArgQueueType:          string(l.Type),
		ArgMessageTTL:         int32(l.TTL(level).Milliseconds()),
		ArgDeadLetterExchange: next,
	}
	if l.Type == runtime.QueueQuorum {
		args[ArgDeadLetterStrategy] = AtLeastOnce
		args[ArgOverflow] = RejectPublish
	}
	return v.Unlimited(Queue{Name: l.Level(level), Args: args})
}

// Queues returns the ladder's queues as a broker of version v takes them,
// in the order they are declared: each level's (and on a split ladder its
// high-priority one, with the same arguments), then the unrouted one,
// last: producers in other languages take it to mean that every level
// queue is declared (docs/wire-format.md, "Is the ladder split?").
func (l Ladder) Queues(v Version) []Queue {
	var qs []Queue
	for level := range l.Levels {
		q := l.LevelQueue(level, v)
		qs = append(qs, q)
		if l.Split {
			qs = append(qs, Queue{Name: l.HighLevel(level), Args: q.Args})
		}
	}
	return append(qs, l.UnroutedQueue(v))
}

// UnroutedQueue returns the queue of waits whose queue is gone: of the
// ladder's type, nothing expiring, no delivery limit on 4.x.
func (l Ladder) UnroutedQueue(v Version) Queue {
	return v.Unlimited(Queue{Name: l.Unrouted(), Args: amqp.Table{ArgQueueType: string(l.Type)}})
}

// Exchange is an exchange to declare: durable, not auto-deleted.
type Exchange struct {
	Name string
	Kind string // amqp.ExchangeTopic, amqp.ExchangeFanout
	Args amqp.Table
}

// Exchanges returns the ladder's exchanges, in the order they are
// declared: the unrouted one before Deliver, which names it.
func (l Ladder) Exchanges() []Exchange {
	xs := []Exchange{
		{Name: l.Unrouted(), Kind: amqp.ExchangeFanout},
		{Name: l.Deliver(), Kind: amqp.ExchangeTopic, Args: amqp.Table{ArgAlternateExchange: l.Unrouted()}},
	}
	for level := range l.Levels {
		xs = append(xs, Exchange{Name: l.Level(level), Kind: amqp.ExchangeTopic})
	}
	return append(xs, Exchange{Name: l.EnterExchange(), Kind: amqp.ExchangeDirect})
}

// Binding binds Dest, a queue or (ToExchange) an exchange, to exchange
// Source with Key.
type Binding struct {
	Source, Dest, Key string
	ToExchange        bool
}

// Bindings returns the ladder's own bindings: each level's exchange to
// its queue for bit 1 (and, split, to its high-priority queue for bit h)
// and to the exchange below (Deliver under level 0) for bit 0, and the
// unrouted queue to its exchange.
func (l Ladder) Bindings() []Binding {
	bs := []Binding{{Source: l.Unrouted(), Dest: l.Unrouted()}}
	for level := range l.Levels {
		skip := strings.Repeat("*.", l.Levels-1-level)
		below := l.Deliver()
		if level > 0 {
			below = l.Level(level - 1)
		}
		bs = append(bs,
			Binding{Source: l.Level(level), Dest: l.Level(level), Key: skip + "1.#"},
			Binding{Source: l.Level(level), Dest: below, Key: skip + "0.#", ToExchange: true})
		if l.Split {
			bs = append(bs, Binding{Source: l.Level(level), Dest: l.HighLevel(level), Key: skip + "h.#"})
		}
	}
	return bs
}

// EnterBindings returns the bindings of the level queues to
// EnterExchange, declared after Bindings: a wait published through it
// before they exist is returned, never held anywhere else.
func (l Ladder) EnterBindings() []Binding {
	var bs []Binding
	for level := range l.Levels {
		bs = append(bs, Binding{Source: l.EnterExchange(), Dest: l.Level(level), Key: l.EnterKey(level, false)})
		if l.Split {
			bs = append(bs, Binding{Source: l.EnterExchange(), Dest: l.HighLevel(level), Key: l.EnterKey(level, true)})
		}
	}
	return bs
}

// QueueBinding is the binding of queue name to Deliver: N "*" words, then
// name's own words. Without "#" it matches only keys of the same number of
// words whose words after the bits are name's, so queue "b" never takes
// the waits of queue "a.b".
func (l Ladder) QueueBinding(name string) Binding {
	return Binding{Source: l.Deliver(), Dest: name, Key: strings.Repeat("*.", l.Levels) + name}
}

// KeyLen is the length of the routing key of a wait for queue name, and of
// its QueueBinding: names.LadderKeyLen.
func (l Ladder) KeyLen(name string) int { return names.LadderKeyLen(name, l.Levels) }

// Wait returns where a wait of delay for queue name, of priority, is
// published: the exchange of the level of the delay's highest set bit,
// with the key of the delay in granularities and name. On a split ladder
// a wait of HighPriority and above has its set bits written "h", so that
// it passes the levels' high-priority queues. delay is rounded up to the
// granularity and must be at least one; above waits.Longest it is
// runtime.ErrDelayTooLong. The key is built from delay alone, so a job
// that waits again gets a key as long as the first.
func (l Ladder) Wait(name string, delay time.Duration, priority uint8) (exchange, key string, err error) {
	e, err := l.Enter(name, delay, priority)
	if err != nil {
		return "", "", err
	}
	return l.Level(e.Level), e.Key, nil
}

// Entry is where a wait enters its ladder.
type Entry struct {
	// Level is the level of the delay's highest set bit, and Queue the
	// queue of that level the wait is held in first: the level's queue,
	// or its high-priority one on a split ladder for priority
	// HighPriority and above.
	Level int
	Queue string
	// Key is the wait's routing key, Wait's.
	Key string
	// BCC is the one key of the wait's AMQP header "BCC" when it is
	// published to EnterExchange: Queue's EnterKey.
	BCC string
}

// Enter returns where a wait of delay for queue name, of priority, enters
// the ladder, by the rules of Wait.
func (l Ladder) Enter(name string, delay time.Duration, priority uint8) (Entry, error) {
	d, err := waits.RoundAtLeastOne(delay, l.Granularity)
	if err != nil {
		return Entry{}, err
	}
	units := uint64(d / l.Granularity)
	if bits.Len64(units) > l.Levels {
		// Not reached: waits.Longest fits the levels.
		return Entry{}, fmt.Errorf("%w: %v is past the ladder's %d levels", waits.ErrTooLong, d, l.Levels)
	}
	high := l.Split && priority >= HighPriority
	one := byte('1')
	if high {
		one = 'h'
	}
	var b strings.Builder
	b.Grow(l.KeyLen(name))
	for i := l.Levels - 1; i >= 0; i-- {
		if units>>i&1 == 1 {
			b.WriteByte(one)
		} else {
			b.WriteByte('0')
		}
		b.WriteByte('.')
	}
	b.WriteString(name)
	level := bits.Len64(units) - 1
	e := Entry{Level: level, Queue: l.Level(level), Key: b.String(), BCC: l.EnterKey(level, high)}
	if high {
		e.Queue = l.HighLevel(level)
	}
	return e, nil
}

// KeyQueue returns the queue name a ladder wait's routing key ends with:
// the key after its N bit words, never the text after its last dot (a
// queue name has dots of its own).
func (l Ladder) KeyQueue(key string) (string, bool) {
	if len(key) <= 2*l.Levels {
		return "", false
	}
	return key[2*l.Levels:], true
}
