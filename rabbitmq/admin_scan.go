package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// Reading a classic queue without removing what is read: AMQP 0-9-1 has no
// peek. A scan consumes the dead-letter queue with manual acks and holds
// every message it reads unacked; when it ends it nacks them all with
// requeue, and RabbitMQ puts requeued messages of a classic queue back at
// their original positions. So a scan costs one transfer of every message
// from the head up to the last one it needs, and nothing is lost if the
// scanner dies: the broker requeues the unacked messages of a closed
// channel the same way. basic.nack, unlike basic.reject, does not count as
// a failed delivery towards a quorum queue's delivery limit.
//
// The consumer is exclusive, so two scans of one queue (two operators, a
// dashboard and a command) take turns instead of each seeing only the
// messages the other does not hold.

// scanIdle bounds the wait for the next message of a scan once the
// messages counted at its start may have been taken by someone else (a
// purge from the management UI, say).
const scanIdle = 2 * time.Second

// busyWait bounds how long a scan waits for another scan of the same queue
// to end.
const busyWait = 30 * time.Second

// ErrBusy is returned when another scan of a dead-letter queue (another
// queuey command or dashboard) holds it for longer than a scan waits.
var ErrBusy = errors.New("rabbitmq: dead-letter queue in use by another reader")

// errScanHeld says a dead-letter queue has a consumer: another scan, or one
// the broker has not finished letting go.
var errScanHeld = errors.New("dead-letter queue has a consumer")

// deadScan reads a dead-letter queue from its head.
type deadScan struct {
	queue, dead string
	ch          *amqp.Channel
	deliveries  <-chan amqp.Delivery
	depth       int // messages in the queue when the scan began
	want        int // messages the scan reads at most
	read        int
	unacked     map[uint64]bool // delivery tags read and not acked
}

// scanDead starts a scan of queue's dead-letter queue that reads at most
// window messages (all it holds when window is zero or less). The caller
// must close it.
func (b *Backend) scanDead(ctx context.Context, queue string, window int) (*deadScan, error) {
	if b.opts.NoDeadLetterQueues {
		return nil, fmt.Errorf("dead letters of %q: %w", queue, ErrNoDeadLetterQueues)
	}
	if b.isClosed() {
		return nil, fmt.Errorf("dead letters of %q: %w", queue, runtime.ErrClosed)
	}
	s := &deadScan{queue: queue, dead: b.names.Dead(queue).Name, unacked: map[uint64]bool{}}
	deadline := time.Now().Add(busyWait)
	for {
		err := s.open(ctx, b, window)
		if err == nil {
			return s, nil
		}
		if !isCode(err, amqp.AccessRefused) && !errors.Is(err, errScanHeld) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %q is held by another queuey reader (a command or a dashboard) for more than %v; try again", ErrBusy, s.dead, busyWait)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("dead letters of %q: waiting for another reader of %q: %w", queue, s.dead, ctx.Err())
		case <-time.After(100 * time.Millisecond): // another scan holds the queue
		}
	}
}

func (s *deadScan) open(ctx context.Context, b *Backend, window int) error {
	ch, err := b.conConn.channel(ctx)
	if err != nil {
		return fmt.Errorf("dead letters of %q: %w", s.queue, err)
	}
	q, err := ch.QueueDeclarePassive(s.dead, true, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		if isCode(err, amqp.NotFound) {
			return fmt.Errorf("dead letters of %q: %w: its dead-letter queue %q does not exist", s.queue, runtime.ErrUnknownQueue, s.dead)
		}
		return brokerError(fmt.Sprintf("dead letters of %q: inspect %q", s.queue, s.dead), err)
	}
	if q.Consumers > 0 {
		// Another scan holds the queue, or one that just ended has not
		// yet been let go: a quorum queue returns a closed consumer's
		// messages asynchronously, so until then they count as neither
		// ready nor readable.
		_ = ch.Close()
		return errScanHeld
	}
	s.depth = q.Messages
	s.want = s.depth
	if window > 0 {
		s.want = min(window, s.depth)
	}
	if s.want == 0 {
		_ = ch.Close()
		return nil
	}
	// Every message read stays unacked until the scan ends, so the
	// prefetch must let all of them through; 0 is unlimited.
	prefetch := s.want
	if prefetch > 65535 {
		prefetch = 0
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		_ = ch.Close()
		return brokerError(fmt.Sprintf("dead letters of %q: set prefetch", s.queue), err)
	}
	d, err := ch.Consume(s.dead, "", false, true, false, false, nil)
	if err != nil {
		_ = ch.Close()
		return err
	}
	s.ch, s.deliveries = ch, d
	return nil
}

// next returns the next message, or false once the scan has read all it
// wants or the queue has no more.
func (s *deadScan) next(ctx context.Context) (*amqp.Delivery, bool, error) {
	if s.read >= s.want {
		return nil, false, nil
	}
	idle := time.NewTimer(scanIdle)
	defer idle.Stop()
	select {
	case m, ok := <-s.deliveries:
		if !ok {
			return nil, false, fmt.Errorf("dead letters of %q: the channel reading %q closed", s.queue, s.dead)
		}
		s.read++
		s.unacked[m.DeliveryTag] = true
		return &m, true, nil
	case <-idle.C:
		return nil, false, nil // fewer messages than counted: someone took some
	case <-ctx.Done():
		return nil, false, fmt.Errorf("dead letters of %q: %w", s.queue, ctx.Err())
	}
}

// ack removes message tag from the dead-letter queue.
func (s *deadScan) ack(tag uint64) error {
	if err := s.ch.Ack(tag, false); err != nil {
		return brokerError(fmt.Sprintf("dead letters of %q: remove a letter from %q", s.queue, s.dead), err)
	}
	delete(s.unacked, tag)
	return nil
}

// close puts every message read and not acked back where it was.
func (s *deadScan) close() error {
	if s.ch == nil {
		return nil
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
func (s *deadScan) letter(m *amqp.Delivery) runtime.DeadLetterInfo {
	return runtime.NewDeadLetterInfo(s.queue, deadLetter(m), m.MessageId)
}
