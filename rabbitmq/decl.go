package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// declarer declares topology on channels of its own, since a refused
// declare closes the channel it was made on: publishes in flight elsewhere
// are not hit.
//
// Queue declares are pipelined: the declares waiting at a moment are
// shared out over up to maxDeclareChannels channels, and each channel gets
// its share as no-wait declares followed by one that waits for its answer
// (declareBatch). The broker handles a channel's frames in order, so that
// answer says that every declare before it was taken too; redeclaring a
// queue that exists costs a fraction of a round trip. Creating a queue
// costs the broker far more, one at a time per channel, which is why the
// declares are spread over many channels rather than all sent on one. A
// refused declare closes its channel and the broker drops what came after
// it, without saying which declare it was: then each declare of that batch
// is made again on its own (solo), and the refusal goes to the one it
// belongs to, the others succeeding.
//
// Each caller waits only as long as its context allows; a batch goes on
// while any of its callers still waits.
type declarer struct {
	conn *connection
	base context.Context // ends when the declarer is closed
	stop context.CancelFunc

	mu       sync.Mutex
	idle     []*declChannel
	pending  []*declareReq // declares not yet sent, in order
	solo     []*declareReq // declares to make on their own, first
	flushers int           // goroutines sending pending declares
	closed   bool
}

// maxDeclareChannels is how many channels carry declares at once, and
// how many are kept open between declares: enough for the broker to
// create queues side by side (it creates them one at a time per channel)
// without opening and closing a channel per declare.
const maxDeclareChannels = 64

// minShare is how many declares each flusher has waiting before submit
// starts one more.
const minShare = 4

// maxPipelined is the most declares sent on one channel before waiting for
// an answer: a refusal among them costs each of them a declare on its own.
const maxPipelined = 64

// declChannel is a declaring channel and the notice of its close, which
// says why when a no-wait declare was refused.
type declChannel struct {
	ch     *amqp.Channel
	closes chan *amqp.Error
}

// declareReq is one queue declare waiting for its batch.
type declareReq struct {
	q    topology.Queue
	ctx  context.Context // the caller's: a declare it gave up on is not sent
	done chan struct{}   // closed once err is set
	err  error
}

func newDeclarer(conn *connection) *declarer {
	base, stop := context.WithCancel(context.Background())
	return &declarer{conn: conn, base: base, stop: stop}
}

// declare declares queue q, durable, and waits for the broker's answer,
// or for ctx to end. As with run, the caller names the operation in its
// error.
func (d *declarer) declare(ctx context.Context, q topology.Queue) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &declareReq{q: q, ctx: ctx, done: make(chan struct{})}
	d.submit(r, false)
	var err error
	select {
	case <-r.done:
		err = r.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return d.conn.blockedError(ctx, err)
	}
	return err
}

// submit queues r, to be sent with others or, when solo, on its own, and
// starts a flusher when fewer than maxDeclareChannels run.
func (d *declarer) submit(r *declareReq, solo bool) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		r.finish(d.closedError())
		return
	}
	if solo {
		d.solo = append(d.solo, r)
	} else {
		d.pending = append(d.pending, r)
	}
	// Another flusher, on another channel, when those running have more
	// than a few declares each to send: declares that come together are
	// sent together, and a burst of them is spread over channels.
	start := d.flushers < maxDeclareChannels && len(d.pending)+len(d.solo) > d.flushers*minShare
	if start {
		d.flushers++
	}
	d.mu.Unlock()
	if start {
		go d.flush()
	}
}

func (r *declareReq) finish(err error) {
	r.err = err
	close(r.done)
}

// flush sends batches of declares until none is left.
func (d *declarer) flush() {
	for {
		batch := d.next()
		if batch == nil {
			return
		}
		d.send(batch)
	}
}

// next takes the next batch: a solo declare, or this flusher's share of
// those pending (at most maxPipelined), leaving out those whose callers
// gave up. It returns nil, and counts this flusher out, when none is left.
func (d *declarer) next() []*declareReq {
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		var batch []*declareReq
		switch {
		case len(d.solo) > 0:
			batch, d.solo = d.solo[:1:1], d.solo[1:]
		case len(d.pending) > 0:
			n := min((len(d.pending)+d.flushers-1)/d.flushers, maxPipelined)
			batch = slices.Clone(d.pending[:n])
			d.pending = d.pending[n:]
			if len(d.pending) == 0 {
				d.pending = nil // let the backing array go
			}
		default:
			d.flushers--
			return nil
		}
		batch = slices.DeleteFunc(batch, func(r *declareReq) bool {
			if err := r.ctx.Err(); err != nil {
				r.finish(err)
				return true
			}
			return false
		})
		if len(batch) > 0 {
			return batch
		}
	}
}

// send declares batch on one channel and settles each of its declares.
func (d *declarer) send(batch []*declareReq) {
	// The batch runs as long as one of its callers waits, and not past
	// the declarer's close.
	ctx, cancel := context.WithCancel(d.base)
	defer cancel()
	var left atomic.Int64
	left.Store(int64(len(batch)))
	for _, r := range batch {
		stop := context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	dc, err := d.take(ctx)
	if err == nil {
		_, err = callCtx(ctx, func() (struct{}, error) { return struct{}{}, dc.declareBatch(batch) }, nil)
		if err == nil {
			d.put(dc)
		} else {
			go dc.ch.Close() // may wait on a broker that stopped answering
		}
	}
	if err != nil && d.base.Err() != nil {
		err = d.closedError()
	}
	if err != nil && len(batch) > 1 && ctx.Err() == nil {
		// Which declare failed is not known: each is made again on its
		// own, and the failure goes to the one it belongs to.
		for _, r := range batch {
			d.submit(r, true)
		}
		return
	}
	for _, r := range batch {
		r.finish(err)
	}
}

// declareBatch sends each declare of batch, all but the last without
// waiting for the broker's answer, and waits for the answer to the last:
// the broker answers it only once it has taken every one before it. When
// one was refused, the broker closed the channel, and the error is why.
func (dc *declChannel) declareBatch(batch []*declareReq) error {
	for i, r := range batch {
		last := i == len(batch)-1
		if _, err := dc.ch.QueueDeclare(r.q.Name, true, false, false, !last, r.q.Args); err != nil {
			if errors.Is(err, amqp.ErrClosed) {
				// Closed by the broker after an earlier declare of the
				// batch: its notice says why.
				if e, ok := <-dc.closes; ok && e != nil {
					return e
				}
			}
			return err
		}
	}
	return nil
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
	dc, err := d.take(ctx)
	if err != nil {
		return err
	}
	_, err = callCtx(ctx, func() (struct{}, error) { return struct{}{}, fn(dc.ch) }, nil)
	if err != nil {
		go dc.ch.Close() // may wait on a broker that stopped answering
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return d.conn.blockedError(ctx, err)
		}
		return err
	}
	d.put(dc)
	return nil
}

func (d *declarer) take(ctx context.Context) (*declChannel, error) {
	d.mu.Lock()
	for len(d.idle) > 0 {
		dc := d.idle[len(d.idle)-1]
		d.idle = d.idle[:len(d.idle)-1]
		if !dc.ch.IsClosed() {
			d.mu.Unlock()
			return dc, nil
		}
	}
	d.mu.Unlock()
	ch, err := d.conn.channel(ctx)
	if err != nil {
		return nil, err
	}
	return &declChannel{ch: ch, closes: ch.NotifyClose(make(chan *amqp.Error, 1))}, nil
}

func (d *declarer) put(dc *declChannel) {
	d.mu.Lock()
	if !d.closed && len(d.idle) < maxDeclareChannels {
		d.idle = append(d.idle, dc)
		dc = nil
	}
	d.mu.Unlock()
	if dc != nil {
		_ = dc.ch.Close()
	}
}

// close closes the idle channels and fails every declare not yet sent;
// batches under way end with their connection, which closes first.
func (d *declarer) close() {
	d.mu.Lock()
	idle, pending := d.idle, append(d.solo, d.pending...)
	d.idle, d.solo, d.pending, d.closed = nil, nil, nil, true
	d.mu.Unlock()
	d.stop()
	for _, dc := range idle {
		_ = dc.ch.Close()
	}
	for _, r := range pending {
		r.finish(d.closedError())
	}
}

// closedError is the answer to a declare that the declarer's close cut
// short.
func (d *declarer) closedError() error {
	return errConnClosed(d.conn.name)
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
