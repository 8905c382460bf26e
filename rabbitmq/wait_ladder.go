package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// ladderDelayer holds every wait of q on the delay ladder of q's queue
// type (topology.Ladder), shared by every ladder-mode queue of that type:
// a fixed set of level queues, declared once per backend, whatever the
// delays. q is bound to the ladder's delivery exchange by the exact key of
// its waits, so it takes its own waits and no other queue's.
type ladderDelayer struct {
	w *waiter
}

// ladders remembers which delay ladders this backend has declared, one per
// queue type (the granularity is the backend's).
type ladders struct {
	mu   sync.Mutex
	done map[runtime.QueueType]bool
	// lost are the types whose ladder was found gone after it was
	// declared: declaring it again binds every queue again.
	lost map[runtime.QueueType]bool
	sem  chan struct{} // one ladder declare at a time
}

func newLadders() *ladders {
	return &ladders{done: map[runtime.QueueType]bool{}, lost: map[runtime.QueueType]bool{}, sem: make(chan struct{}, 1)}
}

// gone records that t's ladder was found gone.
func (l *ladders) gone(t runtime.QueueType) {
	l.mu.Lock()
	l.done[t] = false
	l.lost[t] = true
	l.mu.Unlock()
}

// found records that t's ladder is declared, and reports whether it had
// been found gone before.
func (l *ladders) found(t runtime.QueueType) (wasLost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done[t] = true
	wasLost = l.lost[t]
	delete(l.lost, t)
	return wasLost
}

func (l *ladders) declared(t runtime.QueueType) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[t]
}

// ladder returns the delay ladder of q's waits.
func (d ladderDelayer) ladder(q runtime.QueueConfig) topology.Ladder {
	if l, ok := d.w.ladderOf[q.QueueType]; ok {
		return l
	}
	return topology.NewLadder(q.QueueType, d.w.granularity, d.w.version)
}

// prepare declares the ladder of q's type, once per backend: the first
// ladder-mode queue of that type declared or targeted makes it, and the
// others find it made. It runs on the topology connection.
func (d ladderDelayer) prepare(ctx context.Context, q runtime.QueueConfig) error {
	l := d.ladder(q)
	if d.w.ladders.declared(l.Type) {
		return nil
	}
	select {
	case d.w.ladders.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-d.w.ladders.sem }()
	if d.w.ladders.declared(l.Type) {
		return nil
	}
	if err := d.declareLadder(ctx, l); err != nil {
		return fmt.Errorf("queue %q: declare the %s delay ladder %q: %w", q.Name, l.Type, l.Prefix(), err)
	}
	if d.w.ladders.found(l.Type) {
		// The ladder was deleted under this backend, and its delivery
		// exchange's bindings with it: every queue of the type binds
		// again, not only the one that found it gone.
		return d.rebind(ctx, l.Type)
	}
	return nil
}

// rebind binds again every ladder-mode queue of type t this backend
// knows. A queue deleted since is passed over: its waits go to the
// ladder's unrouted queue.
func (d ladderDelayer) rebind(ctx context.Context, t runtime.QueueType) error {
	for _, q := range d.w.book.all() {
		dl, err := d.w.delayer(q)
		if _, ladder := dl.(ladderDelayer); err != nil || !ladder || q.QueueType != t {
			continue
		}
		if err := d.declare(ctx, q); err != nil && !isCode(err, amqp.NotFound) {
			return err
		}
	}
	return nil
}

// declareLadder declares l's exchanges, then its queues, then its
// bindings, those of its enter exchange last. A level queue that exists with other arguments is refused by
// the broker, and so is the ladder: its waits would not be held as long
// as their keys say.
func (d ladderDelayer) declareLadder(ctx context.Context, l topology.Ladder) error {
	queues := l.Queues(d.w.version)
	return d.w.topo.do(ctx, "declare delay ladder", func(ch *amqp.Channel) error {
		for _, x := range l.Exchanges() {
			if err := ch.ExchangeDeclare(x.Name, x.Kind, true, false, false, false, x.Args); err != nil {
				return brokerError(fmt.Sprintf("declare exchange %q", x.Name), err)
			}
		}
		for _, q := range queues {
			if _, err := ch.QueueDeclare(q.Name, true, false, false, false, q.Args); err != nil {
				if isCode(err, amqp.PreconditionFailed) {
					return fmt.Errorf("%w: level queue %q exists with arguments other than %s (broker: %v): delete it once it is empty, so that it is declared again",
						runtime.ErrQueueMismatch, q.Name, describeArgs(q.Args), err)
				}
				return brokerError(fmt.Sprintf("declare queue %q", q.Name), err)
			}
		}
		for _, b := range append(l.Bindings(), l.EnterBindings()...) {
			var err error
			if b.ToExchange {
				err = ch.ExchangeBind(b.Dest, b.Key, b.Source, false, nil)
			} else {
				err = ch.QueueBind(b.Dest, b.Key, b.Source, false, nil)
			}
			if err != nil {
				return brokerError(fmt.Sprintf("bind %q to exchange %q with key %q", b.Dest, b.Source, b.Key), err)
			}
		}
		return nil
	})
}

// declare binds q, declared by now, to its ladder's delivery exchange.
func (d ladderDelayer) declare(ctx context.Context, q runtime.QueueConfig) error {
	b := d.ladder(q).QueueBinding(q.Name)
	err := d.w.topo.do(ctx, "bind queue to delay ladder", func(ch *amqp.Channel) error {
		return ch.QueueBind(b.Dest, b.Key, b.Source, false, nil)
	})
	if err != nil {
		return brokerError(fmt.Sprintf("bind queue %q to delay ladder exchange %q with routing key %q", q.Name, b.Source, b.Key), err)
	}
	return nil
}

// target makes waits onto q, declared elsewhere and known to exist, reach
// it: the ladder, and q's binding to it.
func (d ladderDelayer) target(ctx context.Context, q runtime.QueueConfig) error {
	if err := d.prepare(ctx, q); err != nil {
		return err
	}
	return d.declare(ctx, q)
}

// wait publishes msg into the level queue of delay's highest set bit,
// through the ladder's enter exchange with the wait's routing key and the
// level queue's enter key as BCC (topology.Entry), mandatory and
// confirmed: it always lands in that queue, so a return (or a 404 for the
// exchange) says the ladder is gone, or was declared by a version without
// the enter exchange. The ladder is then declared again, every
// ladder-mode queue of its type this backend knows bound to it again, and
// the wait published once more; a wait that still fails is refused with
// nothing acked.
func (d ladderDelayer) wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error {
	l := d.ladder(q)
	e, err := l.Enter(q.Name, delay, msg.Priority)
	if err != nil {
		return fmt.Errorf("%s wait on queue %q: %w", kind, q.Name, err)
	}
	h := make(amqp.Table, len(msg.Headers)+1)
	maps.Copy(h, msg.Headers)
	h[headerBCC] = []any{e.BCC}
	msg.Headers = h
	err = d.w.pub.publishLadder(ctx, l.EnterExchange(), e.Key, msg)
	if !errors.Is(err, ErrUnroutable) && !isCode(err, amqp.NotFound) {
		return err
	}
	// The level is gone: the ladder is declared again, every queue of
	// the type bound again, and the wait published once more.
	d.w.ladders.gone(l.Type)
	if perr := d.prepare(ctx, q); perr != nil {
		return fmt.Errorf("%s wait on queue %q: level %q of the %s delay ladder is gone, and declaring the ladder again failed: %w", kind, q.Name, e.Queue, l.Type, perr)
	}
	if err := d.w.pub.publishLadder(ctx, l.EnterExchange(), e.Key, msg); err != nil {
		return fmt.Errorf("%s wait on queue %q: level %q of the %s delay ladder, declared again: %w", kind, q.Name, e.Queue, l.Type, err)
	}
	return nil
}

// headerBCC is the AMQP header of the routing keys that the broker routes
// a message by besides its routing key, and takes off the message before
// it stores it (sender-selected distribution).
const headerBCC = "BCC"
