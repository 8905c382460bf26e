package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var _ runtime.Limiter = (*Backend)(nil)

// AcquirePermit waits until a job of q whose limit key is key may start
// under q's Limit, Rate and LimitKey across every worker on the broker's
// virtual host, and returns the permit that holds its place. It takes the
// key's lease first, then a Limit token, then spends a Rate token, and on
// a failure gives back what it took. The first permit of a queue (or the
// first Consume of it) starts the background reconcile of its tokens, once
// per backend, to that call's Limit and Rate.N; until some worker has
// minted them, AcquirePermit waits. A permit lives on the backend's
// connections: when one is lost, the broker gives its places to the next
// waiting jobs, and Release of it does nothing.
func (b *Backend) AcquirePermit(ctx context.Context, q runtime.QueueConfig, key string) (runtime.Permit, error) {
	return b.limits.acquire(ctx, q, key)
}

// permit is what AcquirePermit grants: the key's lease, the Limit's
// token and the Rate's token it holds, each nil when q has none.
type permit struct {
	once    sync.Once
	key     *ownedLease
	token   *heldToken
	rate    *rateToken
	started sync.Once
}

var _ runtime.PermitStarter = (*permit)(nil)

// Started spends the Rate's token, as the run begins: the spend reaches
// the broker after the run's start, so the token comes back no sooner
// than Rate.Per after it, by the worker's clock too.
func (p *permit) Started() {
	p.started.Do(func() {
		if p.rate != nil {
			p.rate.spend()
		}
	})
}

// Release gives back the token, then the key's lease, and the Rate's
// token unspent when the run never began. A second call does nothing.
func (p *permit) Release() {
	p.once.Do(func() {
		if p.token != nil {
			p.token.release()
		}
		if p.key != nil {
			_ = p.key.Release()
		}
		p.started.Do(func() {
			if p.rate != nil {
				p.rate.giveBack()
			}
		})
	})
}

// rateToken is a Rate token delivered on ch, a channel in tx mode, held
// unacked until the run begins.
type rateToken struct {
	l   *limits
	s   *tokenSet
	ch  *amqp.Channel
	d   amqp.Delivery
	ret string        // the return queue
	per time.Duration // the Rate's period
}

// spend moves the token to its return queue (commitSpend), in the
// background: the run goes on meanwhile. Where the commit fails, the
// token goes back with the channel at once, and one start more may
// follow within the period.
func (r *rateToken) spend() {
	l := r.l
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		_ = r.ch.Close()
		return
	}
	l.wg.Add(1)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		ctx, cancel := l.life.until(context.Background())
		defer cancel()
		err := l.commitSpend(ctx, r.ch, r.s, r.ret, r.d)
		switch {
		case err == nil:
			l.putBack(r.ch, true)
		case errors.Is(err, errReturnGone):
			l.putBack(r.ch, true)
			l.log.Warn("queuey: a rate's return queue was gone; its token is back in the token queue, and the return queue is declared again", "queue", r.s.queue, "return_queue", r.ret)
			if err := l.declareReturn(ctx, r.s, r.ret, r.per); err != nil && !l.life.over() {
				l.log.Warn("queuey: could not declare a rate's return queue again", "queue", r.s.queue, "return_queue", r.ret, "error", err)
			}
		default:
			_ = r.ch.Close()
			if !l.life.over() {
				l.log.Warn("queuey: could not spend a rate's token; it went back with its channel", "queue", r.s.queue, "error", err)
			}
		}
	}()
}

// giveBack returns the token unspent, the run never having begun.
func (r *rateToken) giveBack() {
	if r.ch.Reject(r.d.DeliveryTag, true) != nil || r.ch.TxCommit() != nil {
		_ = r.ch.Close()
		return
	}
	r.l.putBack(r.ch, true)
}

// heldToken is a Limit token delivered on ch and held unacked.
type heldToken struct {
	l   *limits
	ch  *amqp.Channel
	tag uint64
}

// release requeues the token for the next waiting job and keeps the
// channel for reuse. Where the channel died, the broker requeued the token
// already, and release does nothing.
func (t *heldToken) release() {
	if err := t.ch.Reject(t.tag, true); err != nil || t.ch.IsClosed() {
		_ = t.ch.Close()
		return
	}
	t.l.putBack(t.ch, false)
}

// acquire is Backend.AcquirePermit.
func (l *limits) acquire(ctx context.Context, q runtime.QueueConfig, key string) (runtime.Permit, error) {
	if err := l.life.refuse(fmt.Sprintf("permit of queue %q", q.Name)); err != nil {
		return nil, err
	}
	limit, rate := l.start(q)
	p := &permit{}
	if q.LimitKey != "" {
		h, err := l.leases.acquireArgs(ctx, keyLeaseName(q.Name, key), amqp.Table{topology.ArgExpires: int32(keyLeaseExpires / time.Millisecond)})
		if err != nil {
			return nil, fmt.Errorf("queue %q: limit key %s = %q: %w", q.Name, q.LimitKey, key, err)
		}
		p.key = h
	}
	if limit != nil {
		t, err := l.take(ctx, limit)
		if err != nil {
			p.Release()
			return nil, err
		}
		p.token = t
	}
	if rate != nil {
		ret := rateReturnQueue(rate.queue, q.Rate.Per)
		if err := l.declareReturn(ctx, rate, ret, q.Rate.Per); err != nil {
			p.Release()
			return nil, err
		}
		ch, d, err := l.receive(ctx, rate, true)
		if err != nil {
			p.Release()
			return nil, err
		}
		p.rate = &rateToken{l: l, s: rate, ch: ch, d: d, ret: ret, per: q.Rate.Per}
	}
	return p, nil
}

// errTokensAbsent is a wait's when s's token queue does not exist, or
// went away while waiting: s's reconciler is asked to declare and mint it.
var errTokensAbsent = errors.New("token queue absent")

// take waits for a token of s and holds it.
func (l *limits) take(ctx context.Context, s *tokenSet) (*heldToken, error) {
	ch, d, err := l.receive(ctx, s, false)
	if err != nil {
		return nil, err
	}
	return &heldToken{l: l, ch: ch, tag: d.DeliveryTag}, nil
}

// quorumSettle is how long a wait for a token lets a quorum token queue
// that it saw appear settle before it consumes it: on RabbitMQ 3.10, a
// consume that reaches a quorum queue while its first leader is elected
// crashes the consumer's channel, and its connection with it.
const quorumSettle = 250 * time.Millisecond

// receive waits for a token of s, on a channel of its own with prefetch
// 1 (in tx mode when tx is set), and returns the channel and the token,
// held unacked there. While s's token queue is absent, it asks s's
// reconciler to mint it and looks for it again after a growing wait.
func (l *limits) receive(ctx context.Context, s *tokenSet, tx bool) (*amqp.Channel, amqp.Delivery, error) {
	var wait time.Duration
	absent := false // at the last look
	for {
		if absent {
			gone, err := l.absent(ctx, s.token)
			switch {
			case err == nil && !gone:
				absent = false
				if s.tokenArgs[topology.ArgQueueType] == string(runtime.QueueQuorum) && !l.pause(ctx, quorumSettle) {
					return nil, amqp.Delivery{}, l.stopped(ctx, s)
				}
				continue
			case err == nil:
				s.ask()
			}
		} else if ch, err := l.channel(ctx, tx); err == nil {
			d, err := l.await(ctx, ch, s, tx)
			if err == nil {
				return ch, d, nil
			}
			absent = errors.Is(err, errTokensAbsent)
		}
		if err := l.stopped(ctx, s); err != nil {
			return nil, amqp.Delivery{}, err
		}
		wait = nextRetry(wait)
		if !l.pause(ctx, wait) {
			return nil, amqp.Delivery{}, l.stopped(ctx, s)
		}
	}
}

// stopped is the error of a wait for a token of s that ctx or the
// backend's close ended, nil while neither has.
func (l *limits) stopped(ctx context.Context, s *tokenSet) error {
	if err := l.life.refuse(fmt.Sprintf("queue %q: wait for a %s token", s.queue, s.kind)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("queue %q: wait for a %s token: %w", s.queue, s.kind, err)
	}
	return nil
}

// consumerSeq numbers the consumers of token queues.
var consumerSeq atomic.Uint64

// await consumes s's token queue on ch, a channel with prefetch 1, until a
// token arrives, and cancels the consumer then: the token is held unacked
// on ch. When ctx ends or the backend closes first, the consumer is
// cancelled and a token that arrived meanwhile is given back. When it
// fails, ch is closed or, holding nothing, kept for reuse.
func (l *limits) await(ctx context.Context, ch *amqp.Channel, s *tokenSet, tx bool) (amqp.Delivery, error) {
	tag := "queuey-" + string(s.kind) + "-" + strconv.FormatUint(consumerSeq.Add(1), 10)
	msgs, err := ch.Consume(s.token, tag, false, false, false, false, nil)
	if err != nil {
		_ = ch.Close()
		if isCode(err, amqp.NotFound) {
			s.ask()
			return amqp.Delivery{}, errTokensAbsent
		}
		return amqp.Delivery{}, brokerError(fmt.Sprintf("consume token queue %q", s.token), err)
	}
	select {
	case d, ok := <-msgs:
		if !ok {
			// The broker cancelled the consumer (its queue was
			// deleted), or the channel closed.
			if ch.IsClosed() {
				return amqp.Delivery{}, fmt.Errorf("token queue %q: channel closed while waiting", s.token)
			}
			// Not kept for reuse: RabbitMQ 3.10 keeps a quorum queue's
			// state in a channel whose consumer the queue's deletion
			// cancelled, and crashes that channel's connection once a
			// queue of the same name is declared again.
			_ = ch.Close()
			s.ask()
			return amqp.Delivery{}, errTokensAbsent
		}
		if err := ch.Cancel(tag, false); err != nil {
			// The channel died, and the token went back with it.
			_ = ch.Close()
			return amqp.Delivery{}, brokerError(fmt.Sprintf("cancel consumer of %q", s.token), err)
		}
		for range msgs { // closed by the cancel; prefetch 1 let nothing more in
		}
		return d, nil
	case <-ctx.Done():
	case <-l.life.done():
	}
	l.giveBack(ch, tag, msgs, tx)
	return amqp.Delivery{}, l.stopped(ctx, s)
}

// giveBack cancels consumer tag of ch and requeues what it was delivered
// meanwhile, then keeps ch for reuse; on any failure it closes ch, which
// requeues the same.
func (l *limits) giveBack(ch *amqp.Channel, tag string, msgs <-chan amqp.Delivery, tx bool) {
	if l.life.over() {
		_ = ch.Close()
		return
	}
	if err := ch.Cancel(tag, false); err != nil {
		_ = ch.Close()
		return
	}
	for d := range msgs {
		if err := ch.Reject(d.DeliveryTag, true); err != nil {
			_ = ch.Close()
			return
		}
	}
	if tx {
		if err := ch.TxCommit(); err != nil {
			_ = ch.Close()
			return
		}
	}
	l.putBack(ch, tx)
}

// errReturnGone is commitSpend's when the return queue was gone: the
// token is back in its token queue, and the return queue must be
// declared again.
var errReturnGone = errors.New("rate return queue gone")

// commitSpend moves token d of s to return queue ret in a transaction on
// ch. The publish is mandatory: where ret is gone (deleted by hand), the
// broker returns it before the commit's reply, and the token, acked by
// the commit, is published back into the token queue at once
// (errReturnGone); a connection lost between the two loses it.
func (l *limits) commitSpend(ctx context.Context, ch *amqp.Channel, s *tokenSet, ret string, d amqp.Delivery) error {
	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: d.ContentType, Body: d.Body}
	if err := ch.PublishWithContext(ctx, "", ret, true, false, msg); err != nil {
		return brokerError(fmt.Sprintf("spend a token into %q", ret), err)
	}
	if err := ch.Ack(d.DeliveryTag, false); err != nil {
		return brokerError(fmt.Sprintf("spend a token of %q", s.token), err)
	}
	if err := ch.TxCommit(); err != nil {
		return brokerError(fmt.Sprintf("commit a token of %q spent", s.token), err)
	}
	select {
	case <-l.spendReturns(ch):
	default:
		return nil
	}
	l.mu.Lock()
	delete(l.returns, ret)
	l.mu.Unlock()
	if err := ch.PublishWithContext(ctx, "", s.token, false, false, msg); err != nil {
		return brokerError(fmt.Sprintf("put a token back into %q", s.token), err)
	}
	if err := ch.TxCommit(); err != nil {
		return brokerError(fmt.Sprintf("put a token back into %q", s.token), err)
	}
	return errReturnGone
}

// declareReturn declares return queue ret of s for period per, once per
// backend: its TTL is per, and it dead-letters into s's token queue.
func (l *limits) declareReturn(ctx context.Context, s *tokenSet, ret string, per time.Duration) error {
	l.mu.Lock()
	done := l.returns[ret]
	l.mu.Unlock()
	if done {
		return nil
	}
	args := amqp.Table{
		topology.ArgQueueType:            s.tokenArgs[topology.ArgQueueType],
		topology.ArgMessageTTL:           int32(per / time.Millisecond),
		topology.ArgDeadLetterExchange:   "",
		topology.ArgDeadLetterRoutingKey: s.token,
	}
	if args[topology.ArgQueueType] == string(runtime.QueueQuorum) {
		args["x-dead-letter-strategy"] = "at-least-once"
		args["x-overflow"] = "reject-publish"
	}
	ch, err := l.ledger.channel(ctx)
	if err != nil {
		return fmt.Errorf("queue %q: declare rate return queue %q: %w", s.queue, ret, err)
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(ret, true, false, false, false, args); err != nil {
		if isCode(err, amqp.PreconditionFailed) {
			return fmt.Errorf("%w: queue %q: rate return queue %q: %s: delete it so that it is declared again", runtime.ErrQueueMismatch, s.queue, ret, brokerReply(err))
		}
		return brokerError(fmt.Sprintf("queue %q: declare rate return queue %q", s.queue, ret), err)
	}
	l.mu.Lock()
	l.returns[ret] = true
	l.mu.Unlock()
	return nil
}
