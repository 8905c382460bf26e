package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

var _ runtime.Leaser = (*Backend)(nil)

// A lease on RabbitMQ, with nothing but the broker.
//
// Lease name n is the durable classic queue "queuey.lease.<n>", declared
// with x-single-active-consumer and holding one lease message whose body is
// the lease's mark (RFC 3339, empty for none). Every contender consumes it
// with prefetch 1 and manual acks on a channel of the consuming connection.
// The broker delivers to one consumer of such a queue only, the active
// one, and makes the next consumer active when the active one's channel or
// connection closes, handing it the unacked message. So the holder is the
// contender that received the lease message; it keeps it unacked while it
// holds the lease, and a crash, a lost connection or a Release gives it to
// the next contender in the broker's order, promptly.
//
// Advance publishes a new lease message with the new mark (confirmed) and
// only then acks the old one; a crash between the two leaves both, and the
// next holder reads the older first: at worst it acts on an older mark,
// never on one that was not stored. A holder that receives a message older
// than the mark it stored acks it: that drops the extra copies (of a crash
// between publish and ack, or of two contenders that seeded an empty queue
// at once) while the newest copy is kept.
//
// The first contender to find the queue with no message and no consumer
// seeds it with an empty lease message. Purging the queue while contenders
// run leaves no lease to hand out until a contender starts with no other
// consumer there.

// leaseQueuePrefix starts the name of every lease queue.
const leaseQueuePrefix = "queuey.lease."

// leaseQueue returns the name of the queue that holds the lease called
// name.
func leaseQueue(name string) string { return leaseQueuePrefix + name }

// leases hands out leases (runtime.Leaser): each a queue with a single
// active consumer, which holds the lease message.
type leases struct {
	life lifetime
	conn *connection // each contender's channel opens here
	pub  *publisher
}

// AcquireLease contends for the lease called name until this backend
// holds it or ctx ends.
func (b *Backend) AcquireLease(ctx context.Context, name string) (runtime.HeldLease, error) {
	return b.leases.acquire(ctx, name)
}

// acquire is Backend.AcquireLease.
func (l leases) acquire(ctx context.Context, name string) (runtime.HeldLease, error) {
	h, err := l.acquireArgs(ctx, name, nil)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// acquireArgs is acquire with more arguments of the lease queue than
// x-single-active-consumer (a limit key's x-expires).
func (l leases) acquireArgs(ctx context.Context, name string, args amqp.Table) (*ownedLease, error) {
	queue := leaseQueue(name)
	if err := l.life.refuse(fmt.Sprintf("lease %q", name)); err != nil {
		return nil, err
	}
	if len(queue) > codec.MaxShortString {
		return nil, fmt.Errorf("%w: lease queue name %q is %d bytes, want at most %d", runtime.ErrInvalidOption, errs.Clip(queue), len(queue), codec.MaxShortString)
	}
	ch, err := l.conn.channel(ctx)
	if err != nil {
		return nil, fmt.Errorf("lease %q: %w", name, err)
	}
	h, err := l.contend(ctx, ch, queue, args)
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	return h, nil
}

func (l leases) contend(ctx context.Context, ch *amqp.Channel, queue string, extra amqp.Table) (*ownedLease, error) {
	args := amqp.Table{"x-single-active-consumer": true}
	for k, v := range extra {
		args[k] = v
	}
	q, err := ch.QueueDeclare(queue, true, false, false, false, args)
	if err != nil {
		if isCode(err, amqp.PreconditionFailed) {
			return nil, fmt.Errorf("%w: lease queue %q exists with other arguments than %v (%s); delete it so that it is declared again", runtime.ErrQueueMismatch, queue, args, brokerReply(err))
		}
		return nil, brokerError(fmt.Sprintf("declare lease queue %q", queue), err)
	}
	if q.Messages == 0 && q.Consumers == 0 {
		seed := amqp.Publishing{DeliveryMode: amqp.Persistent, Headers: amqp.Table{}}
		if err := l.pub.publish(ctx, queue, seed); err != nil {
			return nil, fmt.Errorf("seed lease queue %q: %w", queue, err)
		}
	}
	if err := ch.Qos(1, 0, false); err != nil {
		return nil, brokerError(fmt.Sprintf("lease queue %q: set prefetch 1", queue), err)
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	msgs, err := ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, brokerError(fmt.Sprintf("consume lease queue %q", queue), err)
	}
	h := &ownedLease{life: l.life, pub: l.pub, queue: queue, ch: ch, msgs: msgs, lost: make(chan struct{})}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.life.done():
		return nil, l.life.refuse(fmt.Sprintf("lease queue %q", queue))
	case m, ok := <-msgs:
		if !ok {
			return nil, fmt.Errorf("lease queue %q: channel closed while contending", queue)
		}
		h.take(m)
	}
	go h.watch(closes)
	return h, nil
}

// ownedLease is a lease message this backend holds unacked.
type ownedLease struct {
	life  lifetime
	pub   *publisher
	queue string
	ch    *amqp.Channel
	msgs  <-chan amqp.Delivery

	mu   sync.Mutex // one Advance at a time
	tag  uint64
	mark time.Time

	lost     chan struct{}
	lostOnce sync.Once
}

// take holds m as the lease message.
func (h *ownedLease) take(m amqp.Delivery) {
	h.tag = m.DeliveryTag
	h.mark = leaseMark(m.Body)
}

// leaseMark reads a lease message's body; anything unreadable is no mark.
func leaseMark(body []byte) time.Time {
	t, err := time.Parse(time.RFC3339Nano, string(body))
	if err != nil {
		return time.Time{}
	}
	return t
}

// watch marks the lease lost when its channel closes or the backend does.
func (h *ownedLease) watch(closes <-chan *amqp.Error) {
	select {
	case <-closes:
	case <-h.life.done():
	case <-h.lost:
	}
	h.setLost()
}

func (h *ownedLease) setLost() { h.lostOnce.Do(func() { close(h.lost) }) }

func (h *ownedLease) Mark() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mark
}

func (h *ownedLease) Lost() <-chan struct{} { return h.lost }

// Advance publishes a lease message carrying mark, confirmed, then acks the
// one held and takes the next, dropping copies older than mark.
func (h *ownedLease) Advance(ctx context.Context, mark time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.lost:
		return fmt.Errorf("lease queue %q: lease lost: %w", h.queue, runtime.ErrClosed)
	default:
	}
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, Headers: amqp.Table{}, Body: []byte(mark.UTC().Format(time.RFC3339Nano))}
	if err := h.pub.publish(ctx, h.queue, msg); err != nil {
		return fmt.Errorf("lease queue %q: store mark: %w", h.queue, err)
	}
	if err := h.ch.Ack(h.tag, false); err != nil {
		h.setLost()
		return brokerError(fmt.Sprintf("lease queue %q: ack the old lease message", h.queue), err)
	}
	for {
		select {
		case <-ctx.Done():
			h.setLost() // nothing is held: let the caller contend again
			return ctx.Err()
		case m, ok := <-h.msgs:
			if !ok {
				h.setLost()
				return fmt.Errorf("lease queue %q: channel closed: %w", h.queue, runtime.ErrClosed)
			}
			if leaseMark(m.Body).Before(mark) {
				// An older copy; the newest is in the queue unacked.
				if err := m.Ack(false); err != nil {
					h.setLost()
					return brokerError(fmt.Sprintf("lease queue %q: ack an old copy", h.queue), err)
				}
				continue
			}
			h.take(m)
			return nil
		}
	}
}

// Release closes the lease's channel: the broker hands the lease message
// to the next contender.
func (h *ownedLease) Release() error {
	h.setLost()
	if err := h.ch.Close(); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return brokerError(fmt.Sprintf("lease queue %q: release", h.queue), err)
	}
	return nil
}
