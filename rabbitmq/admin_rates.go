package rabbitmq

import (
	"context"
	"fmt"

	"github.com/queuey/queuey/admin"
)

// QueueRates are a queue's message rates per second.
type QueueRates struct {
	// Published is the rate of messages published onto the queue.
	Published float64 `json:"published"`
	// Handled is the rate of deliveries acked: jobs done, retried,
	// deferred or dead-lettered.
	Handled float64 `json:"handled"`
}

// MessageRates returns the publish and ack rates of every queue on the
// broker's virtual host, by name, from the management API, which averages
// them over its last few statistics intervals. AMQP tells no rates:
// without the API it fails with an error wrapping admin.ErrCannotList.
func (b *Backend) MessageRates(ctx context.Context) (map[string]QueueRates, error) {
	c, err := b.management()
	if err != nil {
		return nil, err
	}
	rs, err := c.Rates(ctx)
	if err != nil {
		return nil, fmt.Errorf("message rates: %w: %v", admin.ErrCannotList, err)
	}
	out := make(map[string]QueueRates, len(rs))
	for name, r := range rs {
		out[name] = QueueRates{Published: r.Published, Handled: r.Acked}
	}
	return out, nil
}
