package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

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

// deadLetterInfo describes message m of the dead-letter queue of queue as
// operators see it. A message that is not a valid envelope is poison,
// known by its message ID or else its admin.PoisonID.
func deadLetterInfo(queue string, m *amqp.Delivery) admin.DeadLetterInfo {
	reason := codec.DeadReason(m.Headers)
	e, err := codec.Decode(m)
	if err != nil {
		if reason == "" {
			reason = err.Error()
		}
		id := m.MessageId
		if id == "" {
			id = admin.PoisonID(m.Body)
		}
		return admin.DeadLetterInfo{ID: id, Queue: queue, Reason: reason, Poison: true, Body: m.Body, Payload: json.RawMessage("null")}
	}
	if reason == "" {
		reason = e.LastError
	}
	info := admin.DeadLetterInfo{
		ID: e.ID, Queue: queue, Kind: e.Kind, Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
		Priority: e.Priority, EnqueuedAt: e.EnqueuedAt, Headers: e.Headers,
		Reason: reason, LastError: e.LastError,
	}
	if p, err := admin.PayloadJSON(e.Payload); err != nil {
		info.Payload, info.PayloadError = json.RawMessage("null"), err.Error()
	} else {
		info.Payload = p
	}
	return info
}
