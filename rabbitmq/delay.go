package rabbitmq

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// delayer holds waits (retries, deferrals, delayed enqueues) for one delay
// mode.
type delayer interface {
	// declare sets up what q's waits need, on every Declare of q.
	declare(ctx context.Context, q runtime.QueueConfig) error
	// wait publishes msg so that it reaches q after delay, which the caller
	// has rounded up to the granularity and checked against
	// runtime.MaxDeferral. msg already carries its wire priority.
	wait(ctx context.Context, q runtime.QueueConfig, kind topology.HoldKind, msg amqp.Publishing, delay time.Duration) error
}

// queueDelayer holds each distinct delay in a hold queue whose queue-level
// TTL dead-letters its messages back to q. The hold queue is declared right
// before each publish to it, which renews its x-expires lease.
type queueDelayer struct {
	b *Backend
}

func (d queueDelayer) declare(context.Context, runtime.QueueConfig) error { return nil }

func (d queueDelayer) wait(ctx context.Context, q runtime.QueueConfig, kind topology.HoldKind, msg amqp.Publishing, delay time.Duration) error {
	hold, _, err := d.b.names.Hold(q.Name, kind, delay, d.b.opts.Granularity)
	if err != nil {
		return err
	}
	if err := d.b.decl.declare(ctx, hold); err != nil {
		return brokerError(fmt.Sprintf("declare hold queue %q", hold.Name), err)
	}
	return d.b.pub.publish(ctx, "", hold.Name, msg)
}

// pluginDelayer will hold waits in an x-delayed-message exchange.
type pluginDelayer struct{}

func (pluginDelayer) declare(_ context.Context, q runtime.QueueConfig) error {
	return fmt.Errorf("%w: queue %q: delay mode %q (the delayed-message-exchange plugin); use %q", ErrNotImplemented, q.Name, runtime.DelayPlugin, runtime.DelayQueue)
}

func (pluginDelayer) wait(_ context.Context, q runtime.QueueConfig, _ topology.HoldKind, _ amqp.Publishing, _ time.Duration) error {
	return fmt.Errorf("%w: queue %q: delay mode %q", ErrNotImplemented, q.Name, runtime.DelayPlugin)
}
