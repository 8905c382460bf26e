package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// Plain configures a run of the plain amqp091-go loop.
type Plain struct {
	URL   string
	Queue string // a fresh name; the queue is deleted afterwards
	Jobs  int
	// Window is how many publishes await their confirms at once.
	Window   int
	Prefetch int
	// MaxPriority, when above zero, declares the queue with x-max-priority
	// (queuey's default is 10). Zero is the plain loop.
	MaxPriority int
	// Headers, when true, adds the header table queuey's envelope carried
	// before its fields moved into the body (five x-queuey- headers), and
	// a type and a timestamp. False is the plain loop.
	Headers bool
	Meter   Meter
}

// Run publishes p.Jobs persistent, mandatory, confirmed messages from one
// goroutine with up to p.Window confirms in flight, each job encoded as it
// is published, while one consumer decodes and acks each, and measures
// from the first publish until the last delivery is acked.
func (p Plain) Run(ctx context.Context) (Span, error) {
	pubConn, err := amqp.Dial(p.URL)
	if err != nil {
		return Span{}, err
	}
	defer pubConn.Close()
	conConn, err := amqp.Dial(p.URL)
	if err != nil {
		return Span{}, err
	}
	defer conConn.Close()
	defer brokertest.DeleteQueues(p.URL, p.Queue)
	pch, returns, err := p.declare(pubConn)
	if err != nil {
		return Span{}, err
	}

	cch, err := conConn.Channel()
	if err != nil {
		return Span{}, err
	}
	if err := cch.Qos(p.Prefetch, 0, false); err != nil {
		return Span{}, err
	}
	msgs, err := cch.Consume(p.Queue, "", false, false, false, false, nil)
	if err != nil {
		return Span{}, err
	}
	var handled atomic.Int64
	all := make(chan struct{})
	go func() {
		for m := range msgs {
			var j Job
			_ = msgpack.Unmarshal(m.Body, &j)
			_ = m.Ack(false)
			if handled.Add(1) == int64(p.Jobs) {
				close(all)
			}
		}
	}()

	mark := p.Meter.Start()
	if err := p.publish(ctx, pch, returns); err != nil {
		return Span{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return Span{}, fmt.Errorf("plain consumer handled %d of %d jobs: %w", handled.Load(), p.Jobs, ctx.Err())
	}
	return mark.Stop(p.Jobs), nil
}

// Fill publishes p.Jobs messages as Run does onto a fresh queue that no
// one consumes, and leaves them there: a backlog, for measuring what the
// broker holds per waiting message. The caller deletes the queue.
func (p Plain) Fill(ctx context.Context) error {
	conn, err := amqp.Dial(p.URL)
	if err != nil {
		return err
	}
	defer conn.Close()
	pch, returns, err := p.declare(conn)
	if err != nil {
		return err
	}
	return p.publish(ctx, pch, returns)
}

// declare declares p's queue on a channel of conn and puts the channel in
// confirm mode, listening for returns.
func (p Plain) declare(conn *amqp.Connection) (*amqp.Channel, <-chan amqp.Return, error) {
	pch, err := conn.Channel()
	if err != nil {
		return nil, nil, err
	}
	var args amqp.Table
	if p.MaxPriority > 0 {
		args = amqp.Table{"x-max-priority": int32(p.MaxPriority)}
	}
	if _, err := pch.QueueDeclare(p.Queue, true, false, false, false, args); err != nil {
		return nil, nil, err
	}
	if err := pch.Confirm(false); err != nil {
		return nil, nil, err
	}
	return pch, pch.NotifyReturn(make(chan amqp.Return, 1)), nil
}

// publish publishes p.Jobs persistent, mandatory messages on pch with up
// to p.Window confirms in flight, and returns once all are confirmed.
func (p Plain) publish(ctx context.Context, pch *amqp.Channel, returns <-chan amqp.Return) error {
	// Each job is encoded as it is published, as queuey's Enqueue does
	// and as a user's loop would, and decoded as it is handled.
	job := NewJob()
	window := make([]*amqp.DeferredConfirmation, 0, p.Window)
	confirm := func(dc *amqp.DeferredConfirmation) error {
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			return fmt.Errorf("plain publish not confirmed (ack=%v): %v", ok, err)
		}
		return nil
	}
	for range p.Jobs {
		if len(window) == p.Window {
			if err := confirm(window[0]); err != nil {
				return err
			}
			window = window[1:]
		}
		body, err := msgpack.Marshal(&job)
		if err != nil {
			return err
		}
		msg := amqp.Publishing{
			ContentType:  "application/msgpack",
			DeliveryMode: amqp.Persistent,
			MessageId:    uuid.NewString(),
			Body:         body,
		}
		if p.Headers {
			now := time.Now()
			msg.Type, msg.Timestamp = "Job", now
			msg.Headers = amqp.Table{
				"x-queuey-attempt":      int64(1),
				"x-queuey-max-attempts": int64(5),
				"x-queuey-priority":     int64(0),
				"x-queuey-enqueued-at":  now.UnixNano(),
				"x-queuey-queue":        p.Queue,
			}
		}
		dc, err := pch.PublishWithDeferredConfirmWithContext(ctx, "", p.Queue, true, false, msg)
		if err != nil {
			return err
		}
		window = append(window, dc)
	}
	for _, dc := range window {
		if err := confirm(dc); err != nil {
			return err
		}
	}
	select {
	case r := <-returns:
		return fmt.Errorf("plain publish returned: %s", r.ReplyText)
	default:
		return nil
	}
}
