package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// waitChannels is how many confirm-mode channels carry plugin waits.
const waitChannels = 2

// publishWait publishes a wait through the delayed-message-exchange plugin,
// confirmed but not mandatory (the plugin routes nothing at publish time,
// so it returns every mandatory publish), on the channels of plugin waits.
func (p *publisher) publishWait(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	s := p.waits[int(p.nextWait.Add(1))%len(p.waits)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, false)
}
