package rabbitmq

import (
	"context"
	"fmt"

	"github.com/queuey/queuey/admin"
)

// MessageCounts returns the publish and ack counters of every queue on the
// broker's virtual host, by name, from the management API. AMQP tells no
// counters: without the API it fails with an error wrapping
// admin.ErrCannotList.
func (b *Backend) MessageCounts(ctx context.Context) (map[string]admin.MessageCounts, error) {
	return b.ops.messageCounts(ctx)
}

// messageCounts is Backend.MessageCounts.
func (o *ops) messageCounts(ctx context.Context) (map[string]admin.MessageCounts, error) {
	c, err := o.api.client(ctx)
	if err != nil {
		return nil, err
	}
	cs, err := c.Counts(ctx)
	if err != nil {
		return nil, fmt.Errorf("message counts: %w: %v", admin.ErrCannotList, err)
	}
	out := make(map[string]admin.MessageCounts, len(cs))
	for name, n := range cs {
		out[name] = admin.MessageCounts{Published: n.Published, Handled: n.Acked}
	}
	return out, nil
}
