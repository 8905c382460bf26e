package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

var _ runtime.Pauser = (*Backend)(nil)

// Paused queues, with nothing but the broker.
//
// A paused queue q has a marker: the durable, empty queue
// "queuey.paused.<q>". Its existence is the paused state, so it outlives
// every worker and is read with a passive declare. Pausing declares the
// marker, resuming deletes it, and either then publishes a notice,
// "pause <q>" or "resume <q>", to the durable fanout exchange
// "queuey.control". Each watcher binds an exclusive queue of its own to
// that exchange before it reads the marker, so it misses no notice, and
// on each notice of its queue reads the marker again: the marker decides,
// the notice only says when to look. A watcher also reads the marker every
// PauseRecheck and whenever it binds again after a lost connection, which
// covers a notice lost with a connection.

// Names of the pause topology.
const (
	pausedPrefix    = "queuey.paused."
	controlExchange = "queuey.control"
)

// PauseRecheck is how often a watcher of a queue's paused state reads its
// marker with no notice.
const PauseRecheck = 5 * time.Second

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
		return fmt.Errorf("pause: %w", runtime.UnknownQueueError(queue, "does not exist on the broker"))
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
		return fmt.Errorf("%s queue %q: the marker is set, but workers learn of it only within %v: notify them: %w", verb, queue, PauseRecheck, err)
	}
	return nil
}

// WatchPaused sends queue's paused state, read from its marker, now and
// whenever a notice or a recheck finds it changed.
func (b *Backend) WatchPaused(ctx context.Context, queue string) (<-chan bool, error) {
	if _, err := b.marker(queue); err != nil {
		return nil, err
	}
	w := &pauseWatch{b: b, queue: queue, out: make(chan bool, 1)}
	notices, err := w.bind(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.check(ctx, true); err != nil {
		w.closeCh()
		return nil, err
	}
	go w.loop(ctx, notices)
	return w.out, nil
}

type pauseWatch struct {
	b       *Backend
	queue   string
	out     chan bool
	ch      *amqp.Channel
	release func() // gives ch's place back to the pool
	last    bool
}

// maxPauseChecks bounds the reads of paused markers in flight at once:
// each opens a channel of its own on the first consuming connection, and
// a worker of thousands of queues starts a watch of each at once.
const maxPauseChecks = 64

// closeCh closes the watch's channel and gives its place back.
func (w *pauseWatch) closeCh() {
	_ = w.ch.Close()
	w.release()
}

// bind opens a channel with an exclusive queue bound to the control
// exchange and returns its notices.
func (w *pauseWatch) bind(ctx context.Context) (<-chan amqp.Delivery, error) {
	ch, _, release, err := w.b.cons.channel(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch queue %q: %w", w.queue, err)
	}
	notices, err := func() (<-chan amqp.Delivery, error) {
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
	}()
	if err != nil {
		_ = ch.Close()
		release()
		return nil, brokerError(fmt.Sprintf("watch queue %q: bind to %q", w.queue, controlExchange), err)
	}
	w.ch, w.release = ch, release
	return notices, nil
}

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

func (w *pauseWatch) loop(ctx context.Context, notices <-chan amqp.Delivery) {
	defer close(w.out)
	defer func() { w.closeCh() }()
	recheck := time.NewTicker(PauseRecheck)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.b.closed:
			return
		case n, ok := <-notices:
			if !ok {
				notices = w.rebind(ctx)
				if notices == nil {
					return
				}
				continue
			}
			_, queue, _ := strings.Cut(string(n.Body), " ")
			if queue != w.queue {
				continue
			}
		case <-recheck.C:
		}
		if err := w.check(ctx, false); err != nil && ctx.Err() == nil {
			w.b.log.Warn("queuey: cannot read whether the queue is paused; keeping the last state", "queue", w.queue, "paused", w.last, "error", err)
		}
	}
}

// rebind binds again after the channel was lost, with backoff, and reads
// the marker: notices may have been lost meanwhile. It returns nil when
// ctx ends or the backend closes.
func (w *pauseWatch) rebind(ctx context.Context) <-chan amqp.Delivery {
	w.closeCh()
	backoff := 50 * time.Millisecond
	for {
		notices, err := w.bind(ctx)
		if err == nil {
			if err := w.check(ctx, false); err != nil {
				w.b.log.Warn("queuey: cannot read whether the queue is paused; keeping the last state", "queue", w.queue, "paused", w.last, "error", err)
			}
			return notices
		}
		if errors.Is(err, runtime.ErrClosed) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.b.closed:
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}
