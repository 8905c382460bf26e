package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/queueerr"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

var _ admin.Pauser = (*Backend)(nil)

// Paused queues, with nothing but the broker.
//
// A paused queue q has a marker: the durable, empty queue
// "queuey.paused.<q>". Its existence is the paused state, so it outlives
// every worker and is read with a passive declare. Pausing declares the
// marker, resuming deletes it, and either then publishes a notice,
// "pause <q>" or "resume <q>", to the durable fanout exchange
// "queuey.control". A backend binds one exclusive queue to that exchange,
// for all its watchers, before the first reads its marker, so none misses
// a notice, and on each notice wakes the watchers of the queue it names,
// which read the marker again: the marker decides, the notice only says
// when to look. A watcher also reads the marker every PauseRecheck or
// more (see recheckDelay) and whenever the backend binds again after a
// lost connection, which covers a notice lost with a connection.

// Names of the pause topology.
const (
	pausedPrefix    = "queuey.paused."
	controlExchange = "queuey.control"
)

// PauseRecheck is how often, at least, a watcher of a queue's paused state
// reads its marker with no notice. Each read opens a channel (a marker that
// does not exist closes it), so a backend watching many queues spaces the
// reads out: at most pauseRechecksPerSecond in all, on average, which for
// 2,000 queues is one read of each marker every 100 seconds or so.
const PauseRecheck = 5 * time.Second

// pauseRechecksPerSecond bounds the marker reads with no notice that a
// backend makes, in all its watches.
const pauseRechecksPerSecond = 20

// recheckDelay is how long a watch waits for its next read with no notice,
// when n queues are watched: PauseRecheck, or longer so that n watches
// read at most pauseRechecksPerSecond markers a second between them, with
// up to half of it again at random so that watches started together do not
// read together.
func recheckDelay(n int) time.Duration {
	d := max(PauseRecheck, time.Duration(n)*time.Second/pauseRechecksPerSecond)
	return d + rand.N(d/2+1)
}

// PausedMarker returns the name of the queue whose existence marks queue
// paused.
func PausedMarker(queue string) string { return pausedPrefix + queue }

// PauseQueue pauses queue for every worker on the broker until
// ResumeQueue. A queue that does not exist is runtime.ErrUnknownQueue.
func (b *Backend) PauseQueue(ctx context.Context, queue string) error {
	marker, err := b.marker(queue)
	if err != nil {
		return err
	}
	_, exists, err := b.inspect(ctx, queue)
	if err != nil {
		return fmt.Errorf("pause queue %q: %w", queue, err)
	}
	if !exists {
		return fmt.Errorf("pause: %w", queueerr.Unknown(queue, "does not exist on the broker"))
	}
	if err := b.control(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(marker, true, false, false, false, nil)
		return err
	}); err != nil {
		return fmt.Errorf("pause queue %q: declare marker %q: %w", queue, marker, err)
	}
	return b.notify(ctx, "pause", queue)
}

// ResumeQueue resumes queue: its workers consume it again.
func (b *Backend) ResumeQueue(ctx context.Context, queue string) error {
	marker, err := b.marker(queue)
	if err != nil {
		return err
	}
	if err := b.control(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(marker, false, false, false)
		return err
	}); err != nil {
		return fmt.Errorf("resume queue %q: delete marker %q: %w", queue, marker, err)
	}
	return b.notify(ctx, "resume", queue)
}

// Paused reports whether queue's marker exists.
func (b *Backend) Paused(ctx context.Context, queue string) (bool, error) {
	marker, err := b.marker(queue)
	if err != nil {
		return false, err
	}
	_, paused, err := b.inspect(ctx, marker)
	if err != nil {
		return false, fmt.Errorf("paused state of queue %q: %w", queue, err)
	}
	return paused, nil
}

func (b *Backend) marker(queue string) (string, error) {
	if b.isClosed() {
		return "", fmt.Errorf("queue %q: %w", queue, runtime.ErrClosed)
	}
	m := PausedMarker(queue)
	if len(m) > codec.MaxShortString {
		return "", fmt.Errorf("%w: queue %q: its paused marker %q is %d bytes, want at most %d: shorten the queue name", runtime.ErrInvalidOption, clip(queue), clip(m), len(m), codec.MaxShortString)
	}
	return m, nil
}

// control runs fn on a channel of its own on the consuming connection,
// after declaring the control exchange; the channel is closed after, so
// a refusal hits nothing else.
func (b *Backend) control(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := b.conConn.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	if err := ch.ExchangeDeclare(controlExchange, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
		return brokerError(fmt.Sprintf("declare exchange %q", controlExchange), err)
	}
	if fn == nil {
		return nil
	}
	return fn(ch)
}

// notify publishes verb and queue to every watcher, confirmed but not
// mandatory: with no watcher bound, nobody needs the notice.
func (b *Backend) notify(ctx context.Context, verb, queue string) error {
	msg := amqp.Publishing{Headers: amqp.Table{}, Body: []byte(verb + " " + queue)}
	if err := b.pub.send(ctx, controlExchange, "", false, msg); err != nil {
		return fmt.Errorf("%s queue %q: the marker is set, but workers learn of it only when they next read it (every %v or more, longer with many queues): notify them: %w", verb, queue, PauseRecheck, err)
	}
	return nil
}

// WatchPaused sends queue's paused state, read from its marker, now and
// whenever a notice or a recheck finds it changed.
func (b *Backend) WatchPaused(ctx context.Context, queue string) (<-chan bool, error) {
	if _, err := b.marker(queue); err != nil {
		return nil, err
	}
	w := &pauseWatch{b: b, queue: queue, out: make(chan bool, 1), wake: make(chan struct{}, 1)}
	// Bound before the marker is read: a notice sent after the read
	// wakes the watch.
	if err := b.notices.add(ctx, w); err != nil {
		return nil, fmt.Errorf("watch queue %q: %w", queue, err)
	}
	if err := w.check(ctx, true); err != nil {
		b.notices.remove(w)
		return nil, err
	}
	go w.loop(ctx)
	return w.out, nil
}

type pauseWatch struct {
	b     *Backend
	queue string
	out   chan bool
	wake  chan struct{} // a notice of queue came, or the notices were bound again
	last  bool
}

// maxPauseChecks bounds the reads of paused markers in flight at once:
// each opens a channel of its own on the first consuming connection, and
// a worker of thousands of queues starts a watch of each at once.
const maxPauseChecks = 64

// check reads the marker and sends the state when it changed, or always
// when first.
func (w *pauseWatch) check(ctx context.Context, first bool) error {
	select {
	case w.b.checks <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("paused state of queue %q: %w", w.queue, ctx.Err())
	}
	paused, err := w.b.Paused(ctx, w.queue)
	<-w.b.checks
	if err != nil {
		return err
	}
	if first || paused != w.last {
		w.last = paused
		select { // only the latest state waits: replace one not yet read
		case <-w.out:
		default:
		}
		w.out <- paused
	}
	return nil
}

func (w *pauseWatch) loop(ctx context.Context) {
	defer close(w.out)
	defer w.b.notices.remove(w)
	recheck := time.NewTimer(recheckDelay(w.b.notices.size()))
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.b.closed:
			return
		case <-w.wake:
		case <-recheck.C:
		}
		if err := w.check(ctx, false); err != nil && ctx.Err() == nil {
			w.b.log.Warn("queuey: cannot read whether the queue is paused; keeping the last state", "queue", w.queue, "paused", w.last, "error", err)
		}
		recheck.Reset(recheckDelay(w.b.notices.size()))
	}
}

// pauseNotices is a backend's one binding to the control exchange: an
// exclusive queue on a channel of its own, bound when the first watch
// starts and until the backend closes, whose notices wake the watches of
// the queue each names. One binding serves every watch, so a worker of
// thousands of queues holds one channel and one exclusive queue for them,
// not one each.
type pauseNotices struct {
	b *Backend

	bind    sync.Mutex // held while the first binding is made
	mu      sync.Mutex
	bound   bool
	watches map[string]map[*pauseWatch]struct{}
	count   int // watches in all
}

// add makes w hear the notices of its queue, binding first if nothing is
// bound yet.
func (n *pauseNotices) add(ctx context.Context, w *pauseWatch) error {
	if err := n.start(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watches == nil {
		n.watches = map[string]map[*pauseWatch]struct{}{}
	}
	ws := n.watches[w.queue]
	if ws == nil {
		ws = map[*pauseWatch]struct{}{}
		n.watches[w.queue] = ws
	}
	if _, ok := ws[w]; !ok {
		ws[w] = struct{}{}
		n.count++
	}
	return nil
}

// size is how many watches there are.
func (n *pauseNotices) size() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.count
}

func (n *pauseNotices) remove(w *pauseWatch) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.watches[w.queue][w]; ok {
		delete(n.watches[w.queue], w)
		n.count--
	}
	if len(n.watches[w.queue]) == 0 {
		delete(n.watches, w.queue)
	}
}

// start binds, once, and starts the loop that reads the notices.
func (n *pauseNotices) start(ctx context.Context) error {
	n.mu.Lock()
	bound := n.bound
	n.mu.Unlock()
	if bound {
		return nil
	}
	n.bind.Lock()
	defer n.bind.Unlock()
	n.mu.Lock()
	bound = n.bound
	n.mu.Unlock()
	if bound {
		return nil
	}
	ch, release, notices, err := n.open(ctx)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.bound = true
	n.mu.Unlock()
	go n.loop(ch, release, notices)
	return nil
}

// open opens a channel with an exclusive queue bound to the control
// exchange and returns its notices.
func (n *pauseNotices) open(ctx context.Context) (*amqp.Channel, func(), <-chan amqp.Delivery, error) {
	ch, _, release, err := n.b.cons.channel(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	notices, err := callCtx(ctx, func() (<-chan amqp.Delivery, error) {
		if err := ch.ExchangeDeclare(controlExchange, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
			return nil, err
		}
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return nil, err
		}
		if err := ch.QueueBind(q.Name, "", controlExchange, false, nil); err != nil {
			return nil, err
		}
		return ch.Consume(q.Name, "", true, true, false, false, nil)
	}, nil)
	if err != nil {
		go func() { // may wait on a broker that stopped answering
			_ = ch.Close()
			release()
		}()
		return nil, nil, nil, brokerError(fmt.Sprintf("bind to %q", controlExchange), err)
	}
	return ch, release, notices, nil
}

// loop wakes the watches each notice names, and binds again after the
// channel is lost, waking every watch then: notices may have been lost
// meanwhile. It ends when the backend closes.
func (n *pauseNotices) loop(ch *amqp.Channel, release func(), notices <-chan amqp.Delivery) {
	for {
		select {
		case <-n.b.closed:
			_ = ch.Close()
			release()
			return
		case d, ok := <-notices:
			if ok {
				// Notices of dead letters leaving (see deadIndex) do not
				// concern pausing.
				if verb, queue, _ := strings.Cut(string(d.Body), " "); verb != deadNotice {
					n.wake(queue)
				}
				continue
			}
		}
		_ = ch.Close()
		release()
		if ch, release, notices = n.rebind(); notices == nil {
			return
		}
		n.wake("")
	}
}

// rebind binds again, with backoff, until it can; it returns nil notices
// when the backend closes first.
func (n *pauseNotices) rebind() (*amqp.Channel, func(), <-chan amqp.Delivery) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.b.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	backoff := 50 * time.Millisecond
	for {
		ch, release, notices, err := n.open(ctx)
		if err == nil {
			return ch, release, notices
		}
		if errors.Is(err, runtime.ErrClosed) || ctx.Err() != nil {
			return nil, nil, nil
		}
		n.b.log.Debug("queuey: cannot bind to the control exchange again; trying again", "error", err, "after", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, nil
		case <-t.C:
		}
		backoff = min(backoff*2, time.Second)
	}
}

// wake wakes the watches of queue, or every watch when queue is "".
func (n *pauseNotices) wake(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q, ws := range n.watches {
		if queue != "" && q != queue {
			continue
		}
		for w := range ws {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}
