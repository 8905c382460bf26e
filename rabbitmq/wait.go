package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// delayer holds waits (retries, deferrals, delayed enqueues) for one delay
// mode.
type delayer interface {
	// prepare sets up what q's waits need before q is declared, on every
	// Declare of q, so that a failure leaves no queue behind.
	prepare(ctx context.Context, q runtime.QueueConfig) error
	// declare finishes what q's waits need once q is declared.
	declare(ctx context.Context, q runtime.QueueConfig) error
	// wait publishes msg so that it reaches q after delay, which the caller
	// has rounded up to the granularity and checked against
	// runtime.MaxDeferral. msg already carries its wire priority.
	wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error
}

// delayers returns b's delayer of each delay mode.
func delayers(b *Backend) map[runtime.DelayMode]delayer {
	return map[runtime.DelayMode]delayer{
		runtime.DelayQueue:  queueDelayer{b: b},
		runtime.DelayPlugin: pluginDelayer{b: b},
	}
}

// holdDeclareTimeout bounds a hold-queue declare shared by several waits.
const holdDeclareTimeout = 30 * time.Second

// queueDelayer holds each distinct delay in a hold queue whose queue-level
// TTL dead-letters its messages back to q. How a publish to a hold queue
// keeps clear of the queue's expiry: see holdDeclares. Quorum hold queues
// have no expiry, their number being bounded by a ladder of delays
// (topology.QuorumRung).
type queueDelayer struct {
	b *Backend
}

func (d queueDelayer) prepare(context.Context, runtime.QueueConfig) error { return nil }
func (d queueDelayer) declare(context.Context, runtime.QueueConfig) error { return nil }

// holdPublishTries bounds how many times a wait is published when its
// hold queue is found gone each time.
const holdPublishTries = 3

func (d queueDelayer) wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error {
	hold, err := d.b.holdQueue(q, kind, delay)
	if err != nil {
		return err
	}
	for range holdPublishTries {
		if declared, _ := d.b.holdDecl.state(hold, time.Now()); !declared {
			if err := d.declareHold(ctx, hold); err != nil {
				return err
			}
		}
		sent := time.Now()
		if leaseOf(hold) > 0 {
			// Whether to declare it first is known once the channel is
			// held: opening a channel, or waiting for one, takes time.
			stale := func() bool {
				sent = time.Now()
				_, fresh := d.b.holdDecl.state(hold, sent)
				return !fresh
			}
			err = d.b.pub.publishHold(ctx, hold, msg, stale)
		} else {
			err = d.b.pub.publish(ctx, hold.Name, msg)
		}
		if err == nil {
			d.b.holdDecl.took(hold, sent)
			return nil
		}
		switch {
		case errors.Is(err, ErrUnroutable), errors.Is(err, errHoldGone):
			// Gone before the publish came (returned), or as it came
			// (the declare after it failed): the message is not
			// waiting there. Publish it again, after a declare.
			d.b.holdDecl.stale(hold)
		case errors.Is(err, errNotSent):
			// Its channel died before it was sent (another wait's
			// declare failed there, say): send it on another.
		default:
			d.b.holdDecl.forget(hold)
			return err
		}
	}
	return err
}

// declareHold declares hold queue hold and waits for the broker's answer.
//
// Waits onto one hold queue share a declare that is in flight: under a
// burst of retries with one backoff this is one declare instead of
// hundreds. The shared declare runs on a context of its own, so that one
// caller giving up does not fail the others; each caller still stops
// waiting when its own ctx ends.
func (d queueDelayer) declareHold(ctx context.Context, hold topology.Queue) error {
	res := d.b.holds.DoChan(hold.Name, func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdDeclareTimeout)
		defer cancel()
		sent := time.Now()
		err := d.b.decl.declare(dctx, hold)
		if err == nil {
			d.b.holdDecl.took(hold, sent)
		}
		return nil, err
	})
	var err error
	select {
	case r := <-res:
		err = r.Err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return brokerError(fmt.Sprintf("declare hold queue %q", hold.Name), err)
	}
	return nil
}

// pluginDelayer holds every wait of q in one x-delayed-message exchange of
// the delayed-message-exchange plugin, with the delay in the x-delay
// header; the plugin routes each message to q, by routing key q, when it is
// due. Its publishes are not mandatory, since the plugin returns every
// mandatory one; declare checks instead that the exchange exists and binds
// q to it.
type pluginDelayer struct {
	b *Backend
}

// prepare declares q's delay exchange, or checks that it exists when the
// operator provisions it, before q is declared. It runs on the topology
// connection: declaring an exchange of a type the broker does not know (the
// plugin is not enabled) closes the whole connection on RabbitMQ 3.x, not
// just the channel, and the publishing and consuming connections must not
// go with it.
func (d pluginDelayer) prepare(ctx context.Context, q runtime.QueueConfig) error {
	if d.b.opts.ProvisionedDelayExchange {
		return d.checkExchange(ctx, q)
	}
	ex := plugin.ExchangeName(q)
	err := d.b.topo.do(ctx, fmt.Sprintf("declare delay exchange %q", ex), func(ch *amqp.Channel) error {
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

// checkExchange checks that q's delay exchange exists, declaring nothing.
// It runs on the topology connection, as prepare does.
func (d pluginDelayer) checkExchange(ctx context.Context, q runtime.QueueConfig) error {
	ex := plugin.ExchangeName(q)
	err := d.b.topo.do(ctx, fmt.Sprintf("check delay exchange %q", ex), func(ch *amqp.Channel) error {
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
	err := d.b.topo.do(ctx, fmt.Sprintf("bind queue %q to delay exchange %q", q.Name, ex), func(ch *amqp.Channel) error {
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
	err = d.b.pub.publishWait(ctx, p.exchange, p.key, p.msg)
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
