package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

var _ admin.Pauser = (*Backend)(nil)

// Paused queues, with nothing but the broker.
//
// A paused queue q has a marker: the durable, empty queue
// "queuey.paused.<q>". Its existence is the paused state, so it outlives
// every worker. Pausing declares the marker, resuming deletes it, and
// either then publishes a notice, "pause <q>" or "resume <q>", to the
// durable fanout exchange "queuey.control". A backend binds one exclusive
// queue to that exchange, for all its watchers, before the first reads its
// marker, so none misses a notice, and on each notice reads the marker of
// the queue it names again: the marker decides, the notice only says when
// to look. A backend also reads every watched marker every PauseRecheck or
// more (see recheckDelay) and whenever it binds again after a lost
// connection, which covers a notice lost with a connection.
//
// A watcher reads many markers in one pass: a message published to each
// through the default exchange, mandatory and expiring at once, comes back
// when the marker does not exist and is routed (and dropped) when it does
// (see pauseNotices.read). Paused reads one marker with a passive declare.

// Names of the pause topology.
const (
	pausedPrefix    = "queuey.paused."
	controlExchange = "queuey.control"
)

// pauses pauses and resumes queues for every worker on the broker, and
// tells this backend's watchers when a queue they watch is paused
// (pauseNotices).
type pauses struct {
	life    lifetime
	log     *slog.Logger
	conn    *connection // markers' declares and reads, on short-lived channels
	pubConn *connection // the publishing connection, whose block stops marker reads
	pool    *consumePool
	pub     *publisher
	checks  chan struct{} // one per pause check in flight
	notices pauseNotices  // the binding every watch hears from
}

func newPauses(p *pauses) *pauses {
	p.checks = make(chan struct{}, maxPauseChecks)
	p.notices.p = p
	return p
}

// inspect is a passive declare of the queue called name.
func (p *pauses) inspect(ctx context.Context, name string) (amqp.Queue, bool, error) {
	return inspectQueue(ctx, p.life, p.conn, name)
}

// PauseQueue pauses queue for every worker on the broker until
// ResumeQueue. A queue that does not exist is runtime.ErrUnknownQueue.
func (b *Backend) PauseQueue(ctx context.Context, queue string) error {
	return b.pauses.pause(ctx, queue)
}

// ResumeQueue resumes queue: its workers consume it again.
func (b *Backend) ResumeQueue(ctx context.Context, queue string) error {
	return b.pauses.resume(ctx, queue)
}

// Paused reports whether queue's marker exists.
func (b *Backend) Paused(ctx context.Context, queue string) (bool, error) {
	return b.pauses.paused(ctx, queue)
}

// WatchPaused sends queue's paused state, read from its marker, now and
// whenever a notice or a recheck finds it changed. A watch holds no
// goroutine of its own: the backend reads the markers of every watched
// queue together (see pauseNotices).
func (b *Backend) WatchPaused(ctx context.Context, queue string) (<-chan bool, error) {
	return b.pauses.watch(ctx, queue)
}

// PauseRecheck is how often, at least, a backend reads the markers of the
// queues it watches with no notice. Each read is a publish, so a backend
// watching many queues spaces the reads out: at most
// pauseRechecksPerSecond in all, on average, which for 10,000 queues is one
// read of each marker every 20 seconds or so.
const PauseRecheck = 5 * time.Second

// pauseRechecksPerSecond bounds the marker reads with no notice that a
// backend makes, in all its watches.
const pauseRechecksPerSecond = 500

// recheckDelay is how long a backend waits for its next read of every
// watched marker with no notice, when n queues are watched: PauseRecheck,
// or longer so that it reads at most pauseRechecksPerSecond markers a
// second, with up to half of it again at random so that backends started
// together do not read together.
func recheckDelay(n int) time.Duration {
	d := max(PauseRecheck, time.Duration(n)*time.Second/pauseRechecksPerSecond)
	return d + rand.N(d/2+1)
}

// pausedMarker returns the name of the queue whose existence marks queue
// paused.
func pausedMarker(queue string) string { return pausedPrefix + queue }

// pause is Backend.PauseQueue.
func (p *pauses) pause(ctx context.Context, queue string) error {
	marker, err := p.marker(queue)
	if err != nil {
		return err
	}
	_, exists, err := p.inspect(ctx, queue)
	if err != nil {
		return fmt.Errorf("pause queue %q: %w", queue, err)
	}
	if !exists {
		return absentQueue("pause", queue)
	}
	if err := p.control(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(marker, true, false, false, false, nil)
		return err
	}); err != nil {
		return fmt.Errorf("pause queue %q: declare marker %q: %w", queue, marker, err)
	}
	return p.notify(ctx, "pause", queue)
}

// resume is Backend.ResumeQueue.
func (p *pauses) resume(ctx context.Context, queue string) error {
	marker, err := p.marker(queue)
	if err != nil {
		return err
	}
	if err := p.control(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDelete(marker, false, false, false)
		return err
	}); err != nil {
		return fmt.Errorf("resume queue %q: delete marker %q: %w", queue, marker, err)
	}
	return p.notify(ctx, "resume", queue)
}

// paused is Backend.Paused.
func (p *pauses) paused(ctx context.Context, queue string) (bool, error) {
	marker, err := p.marker(queue)
	if err != nil {
		return false, err
	}
	_, paused, err := p.inspect(ctx, marker)
	if err != nil {
		return false, fmt.Errorf("paused state of queue %q: %w", queue, err)
	}
	return paused, nil
}

func (p *pauses) marker(queue string) (string, error) {
	if err := p.life.refuse(fmt.Sprintf("queue %q", queue)); err != nil {
		return "", err
	}
	m := pausedMarker(queue)
	if len(m) > codec.MaxShortString {
		return "", fmt.Errorf("%w: queue %q: its paused marker %q is %d bytes, want at most %d: shorten the queue name", runtime.ErrInvalidOption, errs.Clip(queue), errs.Clip(m), len(m), codec.MaxShortString)
	}
	return m, nil
}

// control runs fn on a channel of its own on the consuming connection,
// after declaring the control exchange; the channel is closed after, so
// a refusal hits nothing else.
func (p *pauses) control(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := p.conn.channel(ctx)
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
func (p *pauses) notify(ctx context.Context, verb, queue string) error {
	msg := amqp.Publishing{Headers: amqp.Table{}, Body: []byte(verb + " " + queue)}
	if err := p.pub.send(ctx, controlExchange, "", false, msg); err != nil {
		return fmt.Errorf("%s queue %q: the marker is set, but workers learn of it only when they next read it (every %v or more, longer with many queues): notify them: %w", verb, queue, PauseRecheck, err)
	}
	return nil
}

// watch is Backend.WatchPaused.
func (p *pauses) watch(ctx context.Context, queue string) (<-chan bool, error) {
	if _, err := p.marker(queue); err != nil {
		return nil, err
	}
	w := &pauseWatch{queue: queue, out: make(chan bool, 1)}
	// Bound before the marker is read: a notice sent after the read
	// makes it read again.
	if err := p.notices.add(ctx, w); err != nil {
		return nil, fmt.Errorf("watch queue %q: %w", queue, err)
	}
	if err := p.notices.firstState(ctx, w); err != nil {
		p.notices.remove(w)
		return nil, err
	}
	p.notices.follow(ctx, w)
	return w.out, nil
}
