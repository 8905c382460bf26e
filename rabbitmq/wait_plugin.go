package rabbitmq

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/runtime"
)

// pluginDelayer holds every wait of q in one x-delayed-message exchange of
// the delayed-message-exchange plugin, with the delay in the x-delay
// header; the plugin routes each message to q, by routing key q, when it is
// due. Its publishes are not mandatory, since the plugin returns every
// mandatory one; declare checks instead that the exchange exists and binds
// q to it.
type pluginDelayer struct {
	w *waiter
}

// prepare declares q's delay exchange, or checks that it exists when the
// operator provisions it, before q is declared. It runs on the topology
// connection: declaring an exchange of a type the broker does not know (the
// plugin is not enabled) closes the whole connection on RabbitMQ 3.x, not
// just the channel, and the publishing and consuming connections must not
// go with it.
func (d pluginDelayer) prepare(ctx context.Context, q runtime.QueueConfig) error {
	if d.w.provisioned {
		return d.target(ctx, q)
	}
	ex := plugin.ExchangeName(q)
	err := d.w.topo.do(ctx, fmt.Sprintf("declare delay exchange %q", ex), func(ch *amqp.Channel) error {
		return ch.ExchangeDeclare(ex, plugin.ExchangeType, true, false, false, false, plugin.ExchangeArgs())
	})
	switch {
	case plugin.IsPluginMissing(err):
		return plugin.MissingError(q.Name, err)
	case isCode(err, amqp.PreconditionFailed):
		return plugin.MismatchError(q.Name, ex, err)
	case err != nil:
		return brokerError(fmt.Sprintf("queue %q: declare delay exchange %q", q.Name, ex), err)
	}
	return nil
}

// target checks that q's delay exchange exists, declaring nothing.
// It runs on the topology connection, as prepare does.
func (d pluginDelayer) target(ctx context.Context, q runtime.QueueConfig) error {
	ex := plugin.ExchangeName(q)
	err := d.w.topo.do(ctx, fmt.Sprintf("check delay exchange %q", ex), func(ch *amqp.Channel) error {
		return ch.ExchangeDeclarePassive(ex, plugin.ExchangeType, true, false, false, false, plugin.ExchangeArgs())
	})
	if isCode(err, amqp.NotFound) {
		return plugin.NotProvisionedError(q.Name, ex, err)
	}
	if err != nil {
		return brokerError(fmt.Sprintf("queue %q: check delay exchange %q", q.Name, ex), err)
	}
	return nil
}

// declare binds q, declared by now, to its delay exchange with routing key
// q.
func (d pluginDelayer) declare(ctx context.Context, q runtime.QueueConfig) error {
	ex := plugin.ExchangeName(q)
	err := d.w.topo.do(ctx, fmt.Sprintf("bind queue %q to delay exchange %q", q.Name, ex), func(ch *amqp.Channel) error {
		return ch.QueueBind(q.Name, q.Name, ex, false, nil)
	})
	if err != nil {
		return brokerError(fmt.Sprintf("bind queue %q to delay exchange %q with routing key %q", q.Name, ex, q.Name), err)
	}
	return nil
}

func (d pluginDelayer) wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error {
	p, err := pluginWait(q, msg, delay)
	if err != nil {
		return fmt.Errorf("%s wait on queue %q: %w", kind, q.Name, err)
	}
	err = d.w.pub.publishWait(ctx, p.exchange, p.key, p.msg)
	if ex, ok := plugin.MissingExchange(err); ok && ex == p.exchange {
		return fmt.Errorf("%s wait on queue %q: %w", kind, q.Name, plugin.GoneError(q.Name, ex, err))
	}
	return err
}

// delayedPublish is where and how a plugin wait is published.
type delayedPublish struct {
	exchange  string
	key       string
	mandatory bool
	msg       amqp.Publishing
}

// pluginWait is the publish that holds msg for delay in q's delay exchange:
// routing key q, the delay in the x-delay header (a signed 32-bit
// millisecond value; a longer delay is runtime.ErrDelayTooLong, never
// clamped), and not mandatory, since the plugin returns every mandatory
// publish. msg keeps its wire priority and headers; its header map is
// copied, not modified.
func pluginWait(q runtime.QueueConfig, msg amqp.Publishing, delay time.Duration) (delayedPublish, error) {
	m, err := plugin.Publishing(msg, delay)
	if err != nil {
		return delayedPublish{}, err
	}
	return delayedPublish{exchange: plugin.ExchangeName(q), key: q.Name, mandatory: false, msg: m}, nil
}
