package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// holdDeclareTimeout bounds a hold-queue declare shared by several waits.
const holdDeclareTimeout = 30 * time.Second

// queueDelayer holds each distinct delay in a hold queue whose queue-level
// TTL dead-letters its messages back to q. How a publish to a hold queue
// keeps clear of the queue's expiry: see holdDeclares. Quorum hold queues
// have no expiry, their number being bounded by a ladder of delays
// (topology.QuorumRung).
type queueDelayer struct {
	w *waiter
}

func (d queueDelayer) prepare(context.Context, runtime.QueueConfig) error { return nil }
func (d queueDelayer) declare(context.Context, runtime.QueueConfig) error { return nil }
func (d queueDelayer) target(context.Context, runtime.QueueConfig) error  { return nil }

// holdPublishTries bounds how many times a wait is published when its
// hold queue is found gone each time.
const holdPublishTries = 3

func (d queueDelayer) wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error {
	hold, err := d.w.names.HoldOf(q, kind, delay, d.w.granularity)
	if err != nil {
		return err
	}
	for range holdPublishTries {
		if declared, _ := d.w.holdDecl.state(hold, time.Now()); !declared {
			if err := d.declareHold(ctx, hold); err != nil {
				return err
			}
		}
		sent := time.Now()
		if expiryOf(hold) > 0 {
			// Whether to declare it first is known once the channel is
			// held: opening a channel, or waiting for one, takes time.
			stale := func() bool {
				sent = time.Now()
				_, fresh := d.w.holdDecl.state(hold, sent)
				return !fresh
			}
			err = d.w.pub.publishHold(ctx, hold, msg, stale)
		} else {
			err = d.w.pub.publish(ctx, hold.Name, msg)
		}
		if err == nil {
			d.w.holdDecl.took(hold, sent)
			return nil
		}
		switch {
		case errors.Is(err, ErrUnroutable), errors.Is(err, errHoldGone):
			// Gone before the publish came (returned), or as it came
			// (the declare after it failed): the message is not
			// waiting there. Publish it again, after a declare.
			d.w.holdDecl.stale(hold)
		case errors.Is(err, errNotSent):
			// Its channel died before it was sent (another wait's
			// declare failed there, say): send it on another.
		default:
			d.w.holdDecl.forget(hold)
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
	res := d.w.declaring.DoChan(hold.Name, func() (any, error) {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdDeclareTimeout)
		defer cancel()
		sent := time.Now()
		err := d.w.decl.declare(dctx, hold)
		if err == nil {
			d.w.holdDecl.took(hold, sent)
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
