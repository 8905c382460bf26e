package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// TakeDeadLetters removes and returns up to max messages of queue's
// dead-letter queue, oldest first, with basic.get. A message that is not a
// valid envelope comes back with a nil Envelope and its raw Body. The
// messages are acked only once all were read; if that fails they stay in the
// dead-letter queue.
func (b *Backend) TakeDeadLetters(ctx context.Context, queue string, max int) ([]runtime.DeadLetter, error) {
	if b.opts.NoDeadLetterQueues {
		return nil, fmt.Errorf("take dead letters of %q: %w", queue, ErrNoDeadLetterQueues)
	}
	if b.isClosed() {
		return nil, fmt.Errorf("take dead letters of %q: %w", queue, runtime.ErrClosed)
	}
	dead := b.names.Dead(queue).Name
	ch, err := b.conConn.channel(ctx)
	if err != nil {
		return nil, fmt.Errorf("take dead letters of %q: %w", queue, err)
	}
	defer ch.Close()
	var (
		out  []runtime.DeadLetter
		last uint64
	)
	for len(out) < max {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("take dead letters of %q: %w", queue, err)
		}
		m, ok, err := ch.Get(dead, false)
		if err != nil {
			if isCode(err, amqp.NotFound) {
				return nil, fmt.Errorf("take dead letters of %q: %w: dead-letter queue %q does not exist", queue, runtime.ErrUnknownQueue, dead)
			}
			return nil, brokerError(fmt.Sprintf("take dead letters of %q from %q", queue, dead), err)
		}
		if !ok {
			break
		}
		last = m.DeliveryTag
		out = append(out, deadLetter(&m))
	}
	if last > 0 {
		if err := ch.Ack(last, true); err != nil {
			return nil, brokerError(fmt.Sprintf("take dead letters of %q: ack", queue), err)
		}
	}
	return out, nil
}

// publishDead publishes msg to the dead-letter queue of queue. The backend
// owns that queue, so when the publish comes back unroutable (someone
// deleted it), it declares the queue again and publishes once more.
func (b *Backend) publishDead(ctx context.Context, queue string, msg amqp.Publishing) error {
	q, qerr := b.declared(queue)
	if qerr != nil {
		q = runtime.QueueConfig{Name: queue}
	}
	dead := b.deadQueue(q)
	first := msg
	first.Headers = maps.Clone(msg.Headers)
	err := b.pub.publish(ctx, dead.Name, first)
	if !errors.Is(err, ErrUnroutable) {
		return err
	}
	if derr := b.declareDead(ctx, q); derr != nil {
		if isCode(derr, amqp.PreconditionFailed) {
			derr = mismatchError(dead, derr, true)
		}
		return errors.Join(err, brokerError(fmt.Sprintf("declare dead-letter queue %q again", dead.Name), derr))
	}
	b.log.Warn("queuey: dead-letter queue was missing; declared it again", "queue", queue, "dead_letter_queue", dead.Name)
	return b.pub.publish(ctx, dead.Name, msg)
}

func deadLetter(m *amqp.Delivery) runtime.DeadLetter {
	reason := codec.DeadReason(m.Headers)
	env, err := codec.Decode(m)
	if err != nil {
		if reason == "" {
			reason = err.Error()
		}
		return runtime.DeadLetter{Reason: reason, Body: m.Body}
	}
	if reason == "" {
		reason = env.LastError
	}
	return runtime.DeadLetter{Envelope: env, Reason: reason}
}
