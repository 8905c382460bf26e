package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/reasons"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// encodeDead is the publish that moves env to the dead-letter queue for
// reason: the job, with the dead-letter headers, the time it died among
// them (codec.HeaderDeadAt), fitted to one frame.
func (b *Backend) encodeDead(env *runtime.Envelope, reason string) (amqp.Publishing, error) {
	return b.encodeCopy(env, codec.Options{DeadReason: reason, DeadAt: deadNow()})
}

// deadNow is the time a letter dead-lettered now records, in UTC.
func deadNow() time.Time { return time.Now().UTC() }

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
	if why, count, ok := codec.BrokerDeath(m.Headers, queue); ok && reason == "" {
		// Dead-lettered by the broker on its own (a quorum queue's
		// delivery limit), not by a worker: the envelope's last error, if
		// any, is not why.
		reason = reasons.BrokerDeadLettered(why, count)
	}
	at := codec.DeadAt(m.Headers, queue)
	e, err := codec.Decode(m)
	if err != nil {
		if reason == "" {
			reason = err.Error()
		}
		id := m.MessageId
		if id == "" {
			id = admin.PoisonID(m.Body)
		}
		return admin.DeadLetterInfo{ID: id, Queue: queue, Reason: reason, Poison: true, Body: m.Body, Payload: json.RawMessage("null"), DeadLetteredAt: at}
	}
	if reason == "" {
		reason = e.LastError
	}
	info := admin.DeadLetterInfo{
		ID: e.ID, Queue: queue, Kind: e.Kind, Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
		Priority: e.Priority, EnqueuedAt: e.EnqueuedAt, Headers: e.Headers,
		Reason: reason, LastError: e.LastError, DeadLetteredAt: at,
	}
	if p, err := admin.PayloadJSON(e.Payload); err != nil {
		info.Payload, info.PayloadError = json.RawMessage("null"), err.Error()
	} else {
		info.Payload = p
	}
	return info
}
