package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/syncx"
	"github.com/queuey/queuey/rabbitmq/internal/acker"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// Consume starts consuming q on a channel of its own on a consuming
// connection, with q.Prefetch unacked deliveries at most and manual acks. q
// must have been declared through this backend. A queue deleted on the
// broker since is declared again, as it was, before it is consumed. A
// refusal that trying again would meet too (access refused, the queue in
// exclusive use or missing even after it was declared again, no channel
// left) is runtime.ErrCannotConsume as well. The runtime.OrphanCheck ctx
// carries, if any, is asked before a redelivery is counted as an attempt.
//
// The first Consume of a queue with a Limit or a Rate starts the
// background reconcile of its tokens (see AcquirePermit), with the Limit
// and Rate of q, or of the declared config where q has none.
func (b *Backend) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	s, err := b.consumers.subscribe(ctx, q)
	if err != nil {
		return nil, err
	}
	if declared, derr := b.book.config(q.Name); derr == nil {
		if q.Limit > 0 {
			declared.Limit = q.Limit
		}
		if !q.Rate.IsZero() {
			declared.Rate = q.Rate
		}
		b.limits.start(declared)
	}
	return s, nil
}

// consumers starts subscriptions and keeps the open ones, whose done work
// Backend.Close acks before the connections close. Settling a delivery
// reaches the components it needs through it: publishing, waits, dead
// letters.
type consumers struct {
	life   lifetime
	log    *slog.Logger
	warn   *warnings
	pool   *consumePool
	book   *queueBook
	enc    encoder
	pub    *publisher
	waits  *waiter
	dead   *deadPublisher
	topo   *declarer // passive declares of a stopping consumer's queue (readyLeft)
	names  topology.Names
	noDead bool // Options.NoDeadLetterQueues
	// redeclare declares a queue again, with what goes with it
	// (Backend.Declare), when it was deleted behind this backend's back.
	redeclare func(ctx context.Context, q runtime.QueueConfig) error

	mu   sync.Mutex
	open map[*subscription]struct{}
}

// closeAcks sends the waiting acks of every open subscription.
func (c *consumers) closeAcks() {
	c.mu.Lock()
	subs := slices.Collect(maps.Keys(c.open))
	c.mu.Unlock()
	for _, s := range subs {
		s.acks.Close()
	}
}

// forget drops s, closed, from the open subscriptions.
func (c *consumers) forget(s *subscription) {
	c.mu.Lock()
	delete(c.open, s)
	c.mu.Unlock()
}

// subscribe is Backend.Consume.
func (c *consumers) subscribe(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	if err := c.life.refuse(fmt.Sprintf("consume %q", q.Name)); err != nil {
		return nil, err
	}
	declared, err := c.book.config(q.Name)
	if err != nil {
		return nil, fmt.Errorf("consume: %w", err)
	}
	// The queue's arguments are the declared ones; how much this consumer
	// holds is the caller's, which may differ from the declaring producer's.
	prefetch, attempts := q.WithDefaults().Prefetch, q.WithDefaults().MaxAttempts
	if q.Timeout > brokerConsumerTimeout {
		c.warn.once("consumer-timeout:"+q.Name, fmt.Sprintf("queuey: queue %q: the handler timeout, %v, is longer than RabbitMQ's default consumer_timeout, %v: "+
			"a job unacked that long makes the broker close its channel and deliver it again; the worker consumes again at once and settles the copy it gets with the run's outcome, "+
			"but a copy another worker gets runs there again: raise the broker's consumer_timeout "+
			"(rabbitmq.conf; or the queue argument x-consumer-timeout, or a consumer-timeout policy, on RabbitMQ 3.12 and later), or split the job into shorter ones", q.Name, q.Timeout, brokerConsumerTimeout),
			"queue", q.Name, "timeout", q.Timeout)
	}
	q = declared
	q.Prefetch = prefetch
	q.MaxAttempts = attempts // the consumer's rule for every job, whatever the job says
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("consume %q: %w", q.Name, err)
	}
	s, err := c.start(ctx, q)
	if err == nil {
		return s, nil
	}
	if !isNoQueue(err) {
		return nil, err
	}
	// Deleted behind this backend's back since it was declared: declare
	// it again, with what goes with it, as a worker's start would.
	if derr := c.redeclare(ctx, declared); derr != nil {
		return nil, consumeError(fmt.Sprintf("consume %q: the queue is missing on the broker, and declaring it again failed", q.Name), derr)
	}
	c.log.Warn("queuey: queue was missing on the broker; declared it again", "queue", q.Name)
	if s, err = c.start(ctx, q); err != nil {
		return nil, err
	}
	return s, nil
}

// brokerConsumerTimeout is RabbitMQ's default consumer_timeout: a
// delivery unacked for that long makes the broker close its channel and
// deliver it again. The broker does not tell its setting over AMQP.
const brokerConsumerTimeout = 30 * time.Minute

// start is Consume of q, with its declared arguments, once.
func (c *consumers) start(ctx context.Context, q runtime.QueueConfig) (*subscription, error) {
	pch, err := c.pool.channel(ctx)
	ch, release := pch.ch, pch.release
	if err != nil {
		return nil, consumeError(fmt.Sprintf("consume %q", q.Name), err)
	}
	abandon := func() {
		go func() { // may wait on a broker that stopped answering
			_ = ch.Close()
			release()
		}()
	}
	if _, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, ch.Qos(q.Prefetch, 0, false) }, nil); err != nil {
		abandon()
		return nil, consumeError(fmt.Sprintf("consume %q: set prefetch %d", q.Name, q.Prefetch), err)
	}
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	// A consumer tag is a short string: at most 255 bytes, and so is the
	// queue name; 200 of it are plenty to tell consumers apart.
	tag := fmt.Sprintf("queuey-%s-%d", q.Name[:min(len(q.Name), 200)], time.Now().UnixNano())
	msgs, err := callCtx(ctx, func() (<-chan amqp.Delivery, error) {
		return ch.Consume(q.Name, tag, false, false, false, false, nil)
	}, nil)
	if err != nil {
		abandon()
		return nil, consumeError(fmt.Sprintf("consume %q", q.Name), err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &subscription{
		cs:      c,
		q:       q,
		ch:      ch,
		conn:    pch.conn,
		c:       pch.c,
		release: release,
		tag:     tag,
		out:     make(chan runtime.Delivery, q.Prefetch), // up to prefetch decoded ahead, so handlers never wait on the decode hop
		ctx:     sctx,
		cancel:  cancel,
		done:    make(chan struct{}),
		endc:    make(chan struct{}),
		got:     make(chan struct{}, 1),
		timers:  map[*time.Timer]struct{}{},
		acks:    acker.New(ch, q.Prefetch),
		orphans: runtime.OrphanCheckFrom(ctx),
	}
	c.mu.Lock()
	c.open[s] = struct{}{}
	c.mu.Unlock()
	go s.loop(msgs, closes)
	return s, nil
}

// subscription is a consumer of one queue on its own channel.
type subscription struct {
	cs   *consumers
	q    runtime.QueueConfig
	ch   *amqp.Channel
	conn *amqp.Connection // ch's connection, dropped when ch stops answering
	c    *connection      // conn's
	// release gives ch's place on its connection back to the pool.
	release func()
	tag     string
	out     chan runtime.Delivery
	acks    *acker.Acker
	dead    syncx.Notes[runtime.DeadLetter] // what the loop dead-lettered itself
	// orphans is the consuming worker's OrphanCheck, if any: the copy of
	// a job its handler still runs is no new attempt (see redelivered).
	orphans runtime.OrphanCheck

	// lastTag is the delivery tag of the latest delivery; got tells a
	// stopping consumer of each delivery once stopping is set.
	lastTag  atomic.Uint64
	stopping atomic.Bool
	got      chan struct{}

	// ready is NotifyReady's fn, called after each delivery handed out
	// and once out is closed (outClosed set first).
	ready     atomic.Pointer[func()]
	outClosed atomic.Bool

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	done   chan struct{} // loop ended
	endc   chan struct{} // closed with out

	mu      sync.Mutex
	stopped bool
	closed  bool
	err     error
	timers  map[*time.Timer]struct{} // pending requeues of invalid messages

	// Consecutive failures to move an invalid message to the dead-letter
	// queue, and when that was last logged; used by the loop goroutine
	// only.
	poisonFails  int
	poisonLogged time.Time
}

func (s *subscription) Deliveries() <-chan runtime.Delivery { return s.out }

// Ended implements runtime.EndNotifier.
func (s *subscription) Ended() <-chan struct{} { return s.endc }

var _ runtime.EndNotifier = (*subscription)(nil)

// NotifyReady implements runtime.ReadyNotifier: a worker's queue with
// nothing to deliver waits on it, holding no goroutine, while the loop
// holds the one it needs anyway.
func (s *subscription) NotifyReady(fn func()) {
	if fn == nil {
		s.ready.Store(nil)
		return
	}
	s.ready.Store(&fn)
	// The loop looks for fn after it hands a delivery out or closes out;
	// one handed out or closed before fn was stored is seen here.
	if len(s.out) > 0 || s.outClosed.Load() {
		s.fireReady()
	}
}

// fireReady calls NotifyReady's fn, if one waits, once.
func (s *subscription) fireReady() {
	if fn := s.ready.Swap(nil); fn != nil {
		(*fn)()
	}
}

// moveTimeout bounds the publish of a message the loop moves (see
// moveCtx).
const moveTimeout = 2 * time.Second

// moveCtx is the context of a publish that moves a message the loop took
// (a redelivery published again with its attempt raised, a letter to the
// dead letters): Close does not cut it short, since the copy may reach the
// broker before its confirm does, but it ends after moveTimeout.
func (s *subscription) moveCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(s.ctx), moveTimeout)
}

func (s *subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *subscription) loop(msgs <-chan amqp.Delivery, closes <-chan *amqp.Error) {
	defer close(s.done)
	defer func() {
		if s.Err() != nil {
			// The channel is gone: deliveries still buffered can no
			// longer be settled, and the broker delivers them again.
			// Running their handlers now would run them twice.
			s.drain()
		}
		close(s.out)
		s.outClosed.Store(true)
		close(s.endc)
		s.fireReady()
	}()
	for {
		select {
		case <-s.ctx.Done():
			return // unsettled deliveries go back when the channel closes
		case <-s.cs.life.done():
			s.fail(s.cs.life.refuse(fmt.Sprintf("consumer of %q", s.q.Name)))
			return
		case m, ok := <-msgs:
			if !ok {
				s.ended(closes)
				return
			}
			if s.ctx.Err() != nil {
				return // closing: it goes back with the channel, untouched
			}
			s.lastTag.Store(m.DeliveryTag)
			if s.stopping.Load() {
				select {
				case s.got <- struct{}{}:
				default:
				}
			}
			env, err := codec.Decode(&m)
			if err != nil {
				kept := m // the rare paths keep the delivery: only they copy it to the heap
				s.poison(&kept, err)
				continue
			}
			if s.mayBeRedelivery(&m) {
				kept := m
				if s.redelivered(&kept, env) {
					continue
				}
			}
			d := &delivery{s: s, tag: m.DeliveryTag, env: env, priority: m.Priority, redelivered: s.redeliveryOf(&m, env)}
			select {
			case s.out <- d:
				s.fireReady()
			case <-s.ctx.Done():
				return
			case <-s.cs.life.done():
				s.fail(s.cs.life.refuse(fmt.Sprintf("consumer of %q", s.q.Name)))
				return
			}
		}
	}
}

// deadLettered records that the loop dead-lettered env (nil for a message
// that is not a valid envelope, whose message ID is id) for reason.
func (s *subscription) deadLettered(env *runtime.Envelope, id, reason string) {
	if env == nil {
		env = &runtime.Envelope{ID: id, Queue: s.q.Name, Kind: s.q.Kind}
	}
	s.dead.Tell(runtime.DeadLetter{Env: env, Reason: reason}, runtime.MaxUnnotifiedDeadLetters)
}

// NotifyDeadLettered implements runtime.DeadLetterNotifier.
func (s *subscription) NotifyDeadLettered(fn func(runtime.DeadLetter)) {
	s.dead.Listen(fn)
}

var _ runtime.DeadLetterNotifier = (*subscription)(nil)

// drain empties the buffer of decoded deliveries without blocking.
func (s *subscription) drain() {
	for {
		select {
		case <-s.out:
		default:
			return
		}
	}
}

// ended records why the delivery stream ended: nil after Stop or Close, the
// channel's error, or a cancel by the broker (the queue was deleted).
func (s *subscription) ended(closes <-chan *amqp.Error) {
	var err error
	select {
	case e, ok := <-closes:
		if ok && e != nil {
			err = brokerError(fmt.Sprintf("consumer of %q", s.q.Name), e)
		}
	default:
	}
	switch {
	case err != nil:
		s.acks.Gone(err) // no ack can be sent any more
	case s.ch.IsClosed():
		s.acks.Gone(errors.New("channel closed"))
	}
	if err == nil {
		switch {
		case s.cs.life.over():
			err = s.cs.life.refuse(fmt.Sprintf("consumer of %q", s.q.Name))
		case s.ch.IsClosed():
			err = fmt.Errorf("consumer of %q: channel closed", s.q.Name)
		default:
			err = fmt.Errorf("consumer of %q cancelled by the broker (queue deleted?)", s.q.Name)
		}
	}
	s.fail(err)
}

func (s *subscription) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopped && !s.closed {
		s.err = err
	}
}

// requeueAfter puts m back on the queue after d. It stays unacked until
// then and holds a prefetch slot; the delivery loop goes on.
func (s *subscription) requeueAfter(m *amqp.Delivery, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // the channel closes: the broker puts it back
	}
	// s.mu is held until t is in s.timers, so the callback, which takes
	// s.mu first, never sees it missing.
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		s.mu.Lock()
		delete(s.timers, t)
		s.mu.Unlock()
		if s.acks.Claim(m.DeliveryTag) != nil {
			return
		}
		if m.Nack(false, true) == nil { // fails only when the channel closed, which puts it back too
			s.acks.Settled(m.DeliveryTag)
		} else {
			s.acks.Unclaim(m.DeliveryTag)
		}
	})
	s.timers[t] = struct{}{}
}
