package rabbitmq

import (
	"context"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
)

var _ admin.ReadyCounter = (*Backend)(nil)

// Ready returns how many messages wait ready on queue, as the broker counts
// them (a passive declare): not delivered to a consumer, not in a hold
// queue. An absent queue is runtime.ErrUnknownQueue.
func (b *Backend) Ready(ctx context.Context, queue string) (int, error) {
	return b.ops.readyCount(ctx, queue)
}

// readyCount is Backend.Ready.
func (o *ops) readyCount(ctx context.Context, queue string) (int, error) {
	if err := o.life.refuse(fmt.Sprintf("count ready jobs of %q", queue)); err != nil {
		return 0, err
	}
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return 0, fmt.Errorf("count ready jobs of %q: %w", queue, err)
	}
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		if isCode(err, amqp.NotFound) {
			return 0, unknownQueue(fmt.Sprintf("count ready jobs of %q", queue), "the queue does not exist")
		}
		return 0, brokerError(fmt.Sprintf("count ready jobs of %q", queue), err)
	}
	return q.Messages, nil
}
