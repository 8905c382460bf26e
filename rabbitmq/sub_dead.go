package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// deadPublisher moves jobs to their queue's dead-letter queue: the
// consumers' dead letters, poison messages and redeliveries past their
// last attempt.
type deadPublisher struct {
	book     *queueBook
	declares *declares
	pub      *publisher
	log      *slog.Logger
}

// publish publishes msg to the dead-letter queue of queue. The backend
// owns that queue, so when the publish comes back unroutable (someone
// deleted it), it declares the queue again and publishes once more.
func (p *deadPublisher) publish(ctx context.Context, queue string, msg amqp.Publishing) error {
	q, qerr := p.book.config(queue)
	if qerr != nil {
		q = runtime.QueueConfig{Name: queue}
	}
	dead := p.declares.deadQueue(q)
	first := msg
	first.Headers = maps.Clone(msg.Headers)
	err := p.pub.publish(ctx, dead.Name, first)
	if !errors.Is(err, ErrUnroutable) {
		return err
	}
	if derr := p.declares.dead(ctx, q); derr != nil {
		if isCode(derr, amqp.PreconditionFailed) {
			derr = mismatchError(dead, derr, true)
		}
		return errors.Join(err, brokerError(fmt.Sprintf("declare dead-letter queue %q again", dead.Name), derr))
	}
	p.log.Warn("queuey: dead-letter queue was missing; declared it again", "queue", queue, "dead_letter_queue", dead.Name)
	return p.pub.publish(ctx, dead.Name, msg)
}
