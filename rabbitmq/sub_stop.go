package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

var _ runtime.ContextStopper = (*subscription)(nil)

// Stop is StopContext with a bound of stopTimeout.
func (s *subscription) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return s.StopContext(ctx)
}

// StopContext cancels the consumer (basic.cancel), waiting for the
// broker's answer as long as ctx allows. Deliveries already handed out
// can still be settled until Close. When ctx ends first, the consumer's
// connection is dropped (see giveUp): what its consumers fetched and did
// not settle goes back to the queues, counted as a run.
func (s *subscription) StopContext(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped || s.closed {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	// The client library drops a delivery that reaches it after the
	// cancel's answer, and the broker can send one then (a quorum queue
	// does, for what it sent as the cancel came); that job would go back
	// with the channel's close, counted as a run that never happened. So
	// acks are held back until the cancel is answered, and the cancel
	// waits until the broker has no prefetch left to send with.
	s.acks.Stall()
	defer s.acks.Unstall()
	s.awaitPrefetchSpent(ctx)
	_, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, s.ch.Cancel(s.tag, false) }, nil)
	switch {
	case err == nil, errors.Is(err, amqp.ErrClosed):
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return s.giveUp(ctx, "stop consuming")
	default:
		return brokerError(fmt.Sprintf("stop consuming %q", s.q.Name), err)
	}
}

// giveUp drops the consumer's connection, which answered nothing to what
// op asked of it before ctx ended. The consumers of a connection that
// stop or close together meet the same end of their time: the first to
// give up drops the connection and reports it, and every other one lets
// go at once, with an error wrapping runtime.ErrClosed.
func (s *subscription) giveUp(ctx context.Context, op string) error {
	if !s.c.drop(s.conn) {
		return fmt.Errorf("%s %q: its connection was dropped: %w", op, s.q.Name, runtime.ErrClosed)
	}
	return fmt.Errorf("%s %q: the broker answered nothing on its connection in the time it had (%w); the connection was dropped, and what its consumers fetched and did not settle goes back counted as a run", op, s.q.Name, context.Cause(ctx))
}

// Bounds on the wait of a stopping consumer for the deliveries its
// prefetch lets the broker send: it ends once spentQuiet passes without
// one while the broker counts no job ready on the queue, after spentMax
// when it counts none then, and after spentReadyMax in any case.
const (
	spentQuiet    = 150 * time.Millisecond
	spentMax      = time.Second
	spentReadyMax = 5 * time.Second
)

// awaitPrefetchSpent waits, acks held back, until the broker cannot send
// this consumer another delivery: as many are unsettled as the prefetch
// allows. On a queue with fewer jobs than that, it waits until none has
// come for spentQuiet and the broker counts none ready on the queue: a
// broker slowed down by load can let spentQuiet pass between deliveries
// it still has to send, and a delivery that reaches the client library
// after the cancel's answer is dropped there, to go back with the
// channel's close counted as a run.
func (s *subscription) awaitPrefetchSpent(ctx context.Context) {
	s.stopping.Store(true)
	quiet := time.NewTimer(spentQuiet)
	defer quiet.Stop()
	start := time.Now()
	limit := time.NewTimer(spentMax)
	defer limit.Stop()
	for {
		if s.lastTag.Load()-s.acks.SettledOnWire() >= uint64(s.q.Prefetch) {
			return
		}
		select {
		case <-s.got:
			quiet.Reset(spentQuiet)
		case <-quiet.C:
			if !s.readyLeft(ctx) {
				return
			}
			quiet.Reset(spentQuiet)
		case <-limit.C:
			if time.Since(start) >= spentReadyMax || !s.readyLeft(ctx) {
				return
			}
			limit.Reset(spentQuiet)
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// readyLeft reports whether the broker counts jobs ready on the
// subscription's queue (a passive declare, on a declaring channel of its
// own), which it may still send this consumer. An error counts as none:
// the wait it ends is bounded anyway.
func (s *subscription) readyLeft(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, spentQuiet)
	defer cancel()
	ready := 0
	err := s.cs.topo.do(ctx, "count ready jobs", func(ch *amqp.Channel) error {
		q, err := ch.QueueDeclarePassive(s.q.Name, true, false, false, false, nil)
		ready = q.Messages
		return err
	})
	return err == nil && ready > 0
}

// stopTimeout bounds Stop and Close, which take no context: as long as a
// worker's shutdown timeout is by default.
const stopTimeout = runtime.DefaultShutdownTimeout

// Close is CloseContext with a bound of stopTimeout.
func (s *subscription) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	return s.CloseContext(ctx)
}

// CloseContext closes the subscription's channel: every unsettled
// delivery goes back to the queue. It waits for the broker's answer as
// long as ctx allows, and drops the channel's connection when ctx ends
// first (see giveUp). Given a ctx that has ended already, it waits for
// nothing: the close goes out, and the channel's place is given back when
// it is answered. It is safe to call twice.
func (s *subscription) CloseContext(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for t := range s.timers {
		t.Stop() // the channel closes: the broker puts those messages back
	}
	clear(s.timers)
	s.mu.Unlock()
	s.cancel()
	// A message the loop is moving (a redelivery published again, a
	// poison message to the dead letters) is settled before the acks are
	// sent: its copy may be on the broker already, and the original going
	// back with the channel would make it two.
	<-s.done
	s.acks.Close() // done work is acked before the channel returns the rest
	s.cs.forget(s)
	if ctx.Err() != nil {
		// No time is left to wait in, and nothing says the broker
		// stopped answering: dropping the connection would take its
		// other channels down with this one.
		go func() {
			_ = s.ch.Close()
			s.release()
		}()
		return nil
	}
	defer s.release()
	_, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, s.ch.Close() }, nil)
	switch {
	case err == nil, errors.Is(err, amqp.ErrClosed):
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return s.giveUp(ctx, "close consumer of")
	default:
		return brokerError(fmt.Sprintf("close consumer of %q", s.q.Name), err)
	}
}
