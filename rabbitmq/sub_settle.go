package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// delivery is one job of a subscription.
type delivery struct {
	s           *subscription
	tag         uint64
	env         *runtime.Envelope
	priority    uint8 // the message's priority on the wire
	redelivered bool  // see redeliveryOf
}

func (d *delivery) Envelope() *runtime.Envelope { return d.env }

// Ack hands the ack to the subscription's acker, which coalesces acks;
// it fails once the channel is known gone.
func (d *delivery) Ack(context.Context) error {
	if err := d.s.acks.Ack(d.tag); err != nil {
		return d.settleErr("ack", err)
	}
	return nil
}

// Requeue puts the delivery back (basic.nack, requeue=true); a delivery
// already settled is refused before anything is sent.
func (d *delivery) Requeue(context.Context) error {
	if err := d.s.acks.Claim(d.tag); err != nil {
		return d.settleErr("requeue", err)
	}
	if err := d.s.ch.Nack(d.tag, false, true); err != nil {
		d.s.acks.Unclaim(d.tag)
		return d.settleErr("requeue", err)
	}
	d.s.acks.Settled(d.tag)
	return nil
}

// Release puts back a delivery no handler started without counting a run.
// A nack would put it back at its place but mark it redelivered (and, on
// a quorum queue, count a delivery), which the next consumer would take
// for a crashed run; so a copy of the job, as it came, is published to
// the queue (confirmed) and the delivery acked after. The copy goes to the
// queue's tail at its priority. When the publish fails, the delivery is
// left unsettled and goes back with the channel's close, counted.
func (d *delivery) Release(ctx context.Context) error {
	next := d.env.Clone()
	if d.redelivered {
		// The job is still a redelivery of a crashed run, which its
		// next delivery reports.
		if next.Headers == nil {
			next.Headers = make(map[string]string, 1)
		}
		next.Headers[headerRedelivered] = "1"
	}
	msg, err := d.s.cs.enc.encode(next, codec.Options{Priority: d.priority})
	if err == nil {
		err = d.s.cs.pub.publish(ctx, d.s.q.Name, msg)
	}
	if err != nil {
		return fmt.Errorf("release job %q: %w", next.ID, err)
	}
	return d.Ack(ctx)
}

func (d *delivery) Retry(ctx context.Context, next *runtime.Envelope, delay time.Duration) error {
	next = d.route(next)
	if err := d.s.cs.waits.waitCopy(ctx, d.s.q.Name, admin.HoldRetry, next, next.Priority, delay); err != nil {
		return fmt.Errorf("retry job %q: %w", next.ID, err)
	}
	return d.Ack(ctx)
}

func (d *delivery) Defer(ctx context.Context, next *runtime.Envelope, delay time.Duration) error {
	next = d.route(next)
	q, err := d.s.cs.book.config(d.s.q.Name)
	if err != nil {
		return fmt.Errorf("defer job %q: %w", next.ID, err)
	}
	if err := d.s.cs.waits.waitCopy(ctx, q.Name, admin.HoldDeferred, next, maxPriority(q), delay); err != nil {
		return fmt.Errorf("defer job %q: %w", next.ID, err)
	}
	return d.Ack(ctx)
}

func (d *delivery) DeadLetter(ctx context.Context, next *runtime.Envelope, reason string) error {
	next = d.route(next)
	if d.s.cs.noDead {
		if err := d.s.acks.Claim(d.tag); err != nil {
			return d.settleErr("reject", err)
		}
		if err := d.s.ch.Reject(d.tag, false); err != nil {
			d.s.acks.Unclaim(d.tag)
			return d.settleErr("reject", err)
		}
		d.s.acks.Settled(d.tag)
		return nil
	}
	msg, err := d.s.cs.enc.encodeDead(next, reason)
	if err != nil {
		return fmt.Errorf("dead-letter job %q: %w", next.ID, err)
	}
	if err := d.s.cs.dead.publish(ctx, d.s.q.Name, msg); err != nil {
		return fmt.Errorf("dead-letter job %q: %w", next.ID, err)
	}
	return d.Ack(ctx)
}

// route makes next travel on the subscription's queue.
func (d *delivery) route(next *runtime.Envelope) *runtime.Envelope {
	if next == nil {
		next = d.env.Clone()
	}
	next.Queue = d.s.q.Name
	return next
}

func (d *delivery) settleErr(op string, err error) error {
	if errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("%s job %q on %q: %w (the broker delivers it again)", op, d.env.ID, d.s.q.Name, runtime.ErrClosed)
	}
	return brokerError(fmt.Sprintf("%s job %q on %q", op, d.env.ID, d.s.q.Name), err)
}
