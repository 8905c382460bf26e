package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// declarer declares topology on channels of its own, since a refused
// declare closes the channel it was made on: publishes in flight elsewhere
// are not hit. Each declare takes an idle channel, or opens one, and gives
// it back when the declare succeeded; no lock is held while a declare waits
// on the broker, and each waits only as long as its context allows.
type declarer struct {
	conn *connection

	mu     sync.Mutex
	idle   []*amqp.Channel
	closed bool
}

// maxIdleDeclareChannels is how many declaring channels are kept open
// between declares: as many as NewProducer and Worker.Run have declares in
// flight at once, so that a start with many queues does not open and close
// a channel per declare.
const maxIdleDeclareChannels = 16

// declare declares queue q, durable. As with run, the caller names the
// operation in its error.
func (d *declarer) declare(ctx context.Context, q topology.Queue) error {
	return d.run(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(q.Name, true, false, false, false, q.Args)
		return err
	})
}

// do is run. The string, the caller's name for the operation, goes into
// no error: every caller names the operation in its own error, which would
// otherwise say it twice.
func (d *declarer) do(ctx context.Context, _ string, fn func(ch *amqp.Channel) error) error {
	return d.run(ctx, fn)
}

// run runs fn on a declaring channel and drops the channel when fn fails:
// the broker closes a channel on a refused declare. fn's error is returned
// as it is, and so are a failure to get a channel and the end of ctx (as
// ErrBlocked too when a resource alarm is why the broker did not answer),
// for the caller to name the operation.
func (d *declarer) run(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ch, err := d.take(ctx)
	if err != nil {
		return err
	}
	_, err = callCtx(ctx, func() (struct{}, error) { return struct{}{}, fn(ch) }, nil)
	if err != nil {
		go ch.Close() // may wait on a broker that stopped answering
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return d.conn.blockedError(ctx, err)
		}
		return err
	}
	d.put(ch)
	return nil
}

func (d *declarer) take(ctx context.Context) (*amqp.Channel, error) {
	d.mu.Lock()
	for len(d.idle) > 0 {
		ch := d.idle[len(d.idle)-1]
		d.idle = d.idle[:len(d.idle)-1]
		if !ch.IsClosed() {
			d.mu.Unlock()
			return ch, nil
		}
	}
	d.mu.Unlock()
	return d.conn.channel(ctx)
}

func (d *declarer) put(ch *amqp.Channel) {
	d.mu.Lock()
	if !d.closed && len(d.idle) < maxIdleDeclareChannels {
		d.idle = append(d.idle, ch)
		ch = nil
	}
	d.mu.Unlock()
	if ch != nil {
		_ = ch.Close()
	}
}

func (d *declarer) close() {
	d.mu.Lock()
	idle := d.idle
	d.idle, d.closed = nil, true
	d.mu.Unlock()
	for _, ch := range idle {
		_ = ch.Close()
	}
}

// inequivalentRE parses the broker's answer to a declare whose arguments
// differ from the existing queue's.
var inequivalentRE = regexp.MustCompile(`inequivalent arg '([^']+)' for queue '(?:[^']|'')*' in vhost '(?:[^']|'')*': received (.+) but current is (.+)$`)

// argValueRE parses an argument value as the broker quotes it: 'x', or
// the value 'x' of type 't'.
var argValueRE = regexp.MustCompile(`^(?:the value )?'((?:[^']|'')*)'(?: of type '[^']*')?$`)

// inequivalent returns the argument the broker says differs, and its
// current value on the existing queue ("" with present false when the queue
// has none).
func inequivalent(err error) (arg, current string, present, ok bool) {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return "", "", false, false
	}
	m := inequivalentRE.FindStringSubmatch(ae.Reason)
	if m == nil {
		return "", "", false, false
	}
	arg, cur := m[1], strings.TrimSpace(m[3])
	if cur == "none" {
		return arg, "", false, true
	}
	if v := argValueRE.FindStringSubmatch(cur); v != nil {
		return arg, v[1], true, true
	}
	return arg, cur, true, true
}

// mismatchError explains a queue that exists with other arguments, with
// the two ways out: drain and delete it so it is declared again, or declare
// it as it is, with the setting that matches the argument the broker names.
// dead says q is a dead-letter queue, whose arguments are not set by the
// queue's config.
func mismatchError(q topology.Queue, err error, dead bool) error {
	asItIs := "or declare it with the arguments it has"
	arg, current, present, ok := inequivalent(err)
	switch {
	case !ok:
	case dead:
		asItIs = fmt.Sprintf("or turn dead-letter queues off (Options.NoDeadLetterQueues) and route dead jobs by broker policy; the backend declares dead-letter queues without arguments (but x-queue-type=quorum beside a quorum queue), and this one has %s", describeArg(arg, current, present))
	case arg == topology.ArgQueueType && present:
		asItIs = fmt.Sprintf("or declare it as it is: queue_type=%s", current)
	case arg == topology.ArgMaxPriority && present && q.Args[topology.ArgQueueType] == string(runtime.QueueQuorum):
		// Quorum queues never have x-max-priority, so the broker names
		// that argument first; the difference that matters is the type.
		asItIs = fmt.Sprintf("or declare it as it is: queue_type=classic max_priority=%s (the existing queue has x-max-priority=%s, so it is a classic queue, and a quorum queue cannot take its place)", current, current)
	case arg == topology.ArgMaxPriority && !present:
		asItIs = "or declare it as it is: max_priority=0 (MaxPriority: runtime.NoPriority in a QueueConfig; deferral still works then, but deferred jobs return in FIFO order, behind the backlog)"
	case arg == topology.ArgMaxPriority:
		asItIs = fmt.Sprintf("or declare it as it is: max_priority=%s", current)
	default:
		asItIs = fmt.Sprintf("or declare it with the arguments it has (%s)", describeArg(arg, current, present))
	}
	return fmt.Errorf("%w: queue %q already exists with arguments other than %s (broker: %v). "+
		"Either drain and delete the queue so that it is declared again with these arguments, %s",
		runtime.ErrQueueMismatch, q.Name, describeArgs(q.Args), err, asItIs)
}

func describeArg(arg, current string, present bool) string {
	if !present {
		return "no " + arg
	}
	return arg + "=" + current
}

func describeArgs(args amqp.Table) string {
	if len(args) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(args))
	for k, v := range args {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
