package rabbitmq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// Reading a dead-letter queue without removing what is read: AMQP 0-9-1 has
// no peek. A scan consumes the dead-letter queue from its head with manual
// acks, and each letter it reads is either taken (acked away: re-driven or
// purged) or kept. How a letter is kept depends on the queue's type:
//
//   - A classic queue: the scan holds every letter it reads unacked and,
//     when it ends, nacks them all with requeue. RabbitMQ puts requeued
//     messages of a classic queue back at their original positions, and
//     does the same with the unacked messages of a reader whose channel
//     closed, so a scan costs one transfer of every letter from the head
//     up to the last one it needs, and nothing is lost if the scanner dies.
//   - A quorum queue counts every message that goes back to it, by nack,
//     reject, or a closed channel's return, as a delivery
//     (x-delivery-count, one per return on RabbitMQ 3.10), and
//     drops or dead-letters a message delivered more often than its
//     delivery limit (a delivery-limit policy, x-delivery-limit, or
//     RabbitMQ 4's default of 20). A queue argument cannot lift a policy's
//     limit, the lower one applies; and a dead-letter queue dead-lettering
//     into itself is a cycle, which the broker drops or leaves stuck. So a
//     scan of a quorum queue gives nothing back (see keeper): it keeps a
//     letter by publishing a copy of it at the tail of the queue and acking
//     the original once the copy is confirmed, and it goes through the
//     whole queue, the letters after the last one it needs included, so
//     that the letters end in the order they began.
//
// The consumer is exclusive, so two scans of one queue (two operators, a
// dashboard and a command) take turns instead of each seeing only the
// messages the other does not hold.

// scanIdle bounds the wait for the next message of a scan once the
// messages counted at its start may have been taken by someone else (a
// purge from the management UI, say).
const scanIdle = 2 * time.Second

// busyTimeout bounds how long a scan waits for another scan of the same queue
// to end.
const busyTimeout = 30 * time.Second

// ErrBusy is returned when another scan of a dead-letter queue (another
// queuey command or dashboard) holds it for longer than a scan waits.
var ErrBusy = errors.New("rabbitmq: dead-letter queue in use by another reader")

// errScanBusy says a dead-letter queue has a consumer: another scan, or one
// the broker has not finished letting go.
var errScanBusy = errors.New("dead-letter queue has a consumer")

// deadScan reads a dead-letter queue from its head. Every letter next
// returns is then either kept (keep) or taken (take); close keeps those
// left undecided.
type deadScan struct {
	o           *ops
	queue, dead string
	// what names what the scan reads, for errors: "dead letters of q".
	what string
	// qtype is the type of the queue read, when known without asking;
	// empty for a dead-letter queue (see isClassic).
	qtype runtime.QueueType
	// copyTo is the exchange that a quorum queue's letters kept are
	// published to, each with its own routing key, to reach the queue
	// again; empty for the default exchange, by the queue's name.
	copyTo     string
	ch         *amqp.Channel
	consumer   string // consumer tag
	deliveries <-chan amqp.Delivery
	depth      int  // messages in the queue when the scan began
	want       int  // messages the scan reads at most
	read       int  // messages read
	ended      bool // the queue had no more for the scan
	dry        bool // ended because no message came for scanIdle
	// unacked holds the delivery tags read and not acked from a classic
	// queue.
	unacked map[uint64]bool
	// keeper keeps the letters of a quorum queue; nil for a classic one.
	keeper *keeper
	// announced is set once the scan has told the readers that index the
	// queue that letters leave it (see deadIndex).
	announced bool
}

// scanDead starts a scan of queue's dead-letter queue that reads at most
// window messages (all it holds when window is zero or less) from a
// classic one, and every message from a quorum one. The caller must close
// it.
func (o *ops) scanDead(ctx context.Context, queue string, window int) (*deadScan, error) {
	if o.opts.NoDeadLetterQueues {
		return nil, fmt.Errorf("dead letters of %q: %w", queue, errNoDeadLetterQueues)
	}
	if err := o.life.refuse(fmt.Sprintf("dead letters of %q", queue)); err != nil {
		return nil, err
	}
	s := &deadScan{o: o, queue: queue, dead: o.names.Dead(queue).Name, what: fmt.Sprintf("dead letters of %q", queue)}
	return s, s.start(ctx, window)
}

// start opens s, waiting up to busyTimeout for another scan of its queue
// to end.
func (s *deadScan) start(ctx context.Context, window int) error {
	s.unacked = map[uint64]bool{}
	deadline := time.Now().Add(busyTimeout)
	for {
		err := s.open(ctx, window)
		if err == nil {
			return nil
		}
		if !isCode(err, amqp.AccessRefused) && !errors.Is(err, errScanBusy) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %q is held by another queuey reader (a command or a dashboard) for more than %v; try again", ErrBusy, s.dead, busyTimeout)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for another reader of %q: %w", s.what, s.dead, ctx.Err())
		case <-time.After(100 * time.Millisecond): // another scan holds the queue
		}
	}
}

// open opens the scan on a channel of its own, closed again unless the
// scan consumes on it.
func (s *deadScan) open(ctx context.Context, window int) error {
	ch, err := s.o.conn.channel(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", s.what, err)
	}
	if err := s.consume(ctx, ch, window); err != nil || s.ch == nil {
		return err
	}
	return nil
}

// consume starts the scan's consumer on ch, unless the queue is empty: s.ch
// is set once it consumes. The caller closes ch otherwise.
func (s *deadScan) consume(ctx context.Context, ch *amqp.Channel, window int) error {
	q, err := ch.QueueDeclarePassive(s.dead, true, false, false, false, nil)
	if err != nil {
		if isCode(err, amqp.NotFound) {
			return unknownQueue(s.what, fmt.Sprintf("%q does not exist", s.dead))
		}
		return brokerError(fmt.Sprintf("%s: inspect %q", s.what, s.dead), err)
	}
	if q.Consumers > 0 {
		// Another scan holds the queue, or one that just ended has not
		// yet been let go: a quorum queue returns a closed consumer's
		// messages asynchronously, so until then they count as neither
		// ready nor readable.
		return errScanBusy
	}
	classic := s.qtype == runtime.QueueClassic
	if s.qtype == "" {
		if classic, err = s.o.isClassic(ctx, s.dead); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	s.depth = q.Messages
	s.want = s.depth
	if window > 0 && classic {
		s.want = min(window, s.depth)
	}
	if s.want == 0 {
		return nil
	}
	var prefetch int
	if classic {
		// Every message read stays unacked until the scan ends, so the
		// prefetch must let all of them through; 0 is unlimited.
		prefetch = s.want
		if prefetch > 65535 {
			prefetch = 0
		}
	} else {
		prefetch = min(s.want, keepPrefetch)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return brokerError(fmt.Sprintf("%s: set prefetch", s.what), err)
	}
	var token [8]byte
	_, _ = rand.Read(token[:])
	s.consumer = "queuey-dead-read-" + hex.EncodeToString(token[:])
	d, err := ch.Consume(s.dead, s.consumer, false, true, false, false, nil)
	if err != nil {
		return err
	}
	s.ch, s.deliveries = ch, d
	if !classic {
		s.keeper = newKeeper(s, prefetch)
	}
	return nil
}

// isClassic reports whether dead-letter queue dead, which exists, is a
// classic queue as the backend declares it (no arguments): a declare of
// one is then answered as it was made. Any other queue, a quorum one
// above all, is refused with PRECONDITION_FAILED, which the broker logs as
// an error. A queue refused, or that the backend has no right to declare,
// is read as a quorum queue is, which loses nothing whatever its type. The declare comes after a passive
// declare found the queue, so it creates nothing unless the queue is
// deleted in between. A queue found not classic is remembered as such for
// the backend's life, so that the broker logs one refusal per queue: were
// it deleted and declared classic again, it would only be read at a
// quorum queue's cost.
func (o *ops) isClassic(ctx context.Context, dead string) (bool, error) {
	if _, ok := o.copyRead.Load(dead); ok {
		return false, nil
	}
	err := o.decl.declare(ctx, topology.Queue{Name: dead, Args: amqp.Table{topology.ArgQueueType: string(runtime.QueueClassic)}})
	switch {
	case err == nil:
		return true, nil
	case isCode(err, amqp.PreconditionFailed):
		o.copyRead.Store(dead, struct{}{})
		return false, nil
	case isCode(err, amqp.AccessRefused): // no right to declare it: its type is unknown
		return false, nil
	default:
		return false, err
	}
}

// next returns the next message, or false once the scan has read all it
// wants or the queue has no more.
func (s *deadScan) next(ctx context.Context) (*amqp.Delivery, bool, error) {
	if s.keeper != nil {
		if err := s.keeper.flush(ctx, false); err != nil {
			return nil, false, err
		}
	}
	if s.ended || s.read >= s.want {
		return nil, false, nil
	}
	idle := time.NewTimer(scanIdle)
	defer idle.Stop()
	for {
		m, ok, err := s.await(ctx, idle)
		if err != nil || ok || !s.dry || s.keeper != nil {
			return m, ok, err
		}
		// No message came for scanIdle. A classic queue that still has
		// messages ready has them on their way to this scan, which is
		// the only consumer: the broker is slow, not the queue short.
		q, err := s.ch.QueueDeclarePassive(s.dead, true, false, false, false, nil)
		if err != nil || q.Messages == 0 {
			return nil, false, nil
		}
		s.ended, s.dry = false, false
		idle.Reset(scanIdle)
	}
}

// await waits for the next message, until idle fires.
func (s *deadScan) await(ctx context.Context, idle *time.Timer) (*amqp.Delivery, bool, error) {
	select {
	case m, ok := <-s.deliveries:
		if !ok {
			return nil, false, fmt.Errorf("%s: the channel reading %q closed", s.what, s.dead)
		}
		if s.keeper != nil && s.keeper.ownCopy(&m) {
			// Fewer messages than counted: someone took some, and the
			// scan has come round to its own copies.
			s.ended = true
			return nil, false, nil
		}
		s.read++
		if s.keeper != nil {
			s.keeper.add(&m)
		} else {
			s.unacked[m.DeliveryTag] = true
		}
		return &m, true, nil
	case <-idle.C:
		s.ended, s.dry = true, true
		return nil, false, nil // fewer messages than counted: someone took some
	case <-ctx.Done():
		return nil, false, fmt.Errorf("%s: %w", s.what, ctx.Err())
	}
}

// keep leaves message m, read by next, in the dead-letter queue, in its
// place.
func (s *deadScan) keep(m *amqp.Delivery) {
	if s.keeper != nil {
		s.keeper.keep(m.DeliveryTag)
	}
}

// take removes message tag, read by next, from the dead-letter queue.
func (s *deadScan) take(ctx context.Context, tag uint64) error {
	if !s.announced {
		if err := s.o.announceTake(ctx, s.queue); err != nil {
			return err
		}
		s.announced = true
	}
	if s.keeper != nil {
		return s.keeper.take(tag)
	}
	if err := s.ch.Ack(tag, false); err != nil {
		return s.ackError(err)
	}
	delete(s.unacked, tag)
	return nil
}

func (s *deadScan) ackError(err error) error {
	return brokerError(fmt.Sprintf("%s: remove a letter from %q", s.what, s.dead), err)
}

// close ends the scan and keeps every message read and not taken in its
// place. A scan of a quorum queue first reads and keeps the rest of the
// queue, unless ctx has ended (see keeper.finish).
func (s *deadScan) close(ctx context.Context) error {
	if s.ch == nil {
		return nil
	}
	if s.keeper != nil {
		return s.keeper.finish(ctx)
	}
	var err error
	if len(s.unacked) > 0 {
		// One nack covers every unacked tag up to the highest.
		err = s.ch.Nack(slices.Max(slices.Collect(maps.Keys(s.unacked))), true, true)
	}
	// Closing the channel returns whatever the broker sent past the last
	// message read, and anything the nack did not, to the queue.
	return errors.Join(err, s.ch.Close())
}

// letter describes message m of the scan.
func (s *deadScan) letter(m *amqp.Delivery) admin.DeadLetterInfo {
	return deadLetterInfo(s.queue, m)
}
