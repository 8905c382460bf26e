package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// errMintLocked is a reconcile's when another connection holds the mint
// lock: it tries again later.
var errMintLocked = errors.New("mint lock held by another connection")

// reconciler reconciles s until it holds, then again each time a waiting
// job asks, until the backend closes. A failed reconcile (the lock held
// elsewhere, a lost connection) is tried again after a growing wait.
func (l *limits) reconciler(s *tokenSet) {
	defer l.wg.Done()
	ctx, cancel := l.life.until(context.Background())
	defer cancel()
	var wait time.Duration
	warned := ""
	once := sync.OnceFunc(func() { close(s.reconciled) })
	for {
		err := l.reconcile(ctx, s)
		if l.life.over() {
			return
		}
		if err == nil {
			once()
			wait, warned = 0, ""
			select {
			case <-s.kick:
				continue
			case <-l.life.done():
				return
			}
		}
		switch {
		case errors.Is(err, errMintLocked):
			l.log.Debug("queuey: "+string(s.kind)+" tokens: mint lock held elsewhere; trying again", "queue", s.queue, "lock", s.lock)
		case err.Error() != warned:
			warned = err.Error()
			l.log.Warn("queuey: could not reconcile a global "+string(s.kind)+"'s tokens; trying again", "queue", s.queue, "error", err)
		}
		wait = nextRetry(wait)
		if !l.pause(ctx, wait) {
			return
		}
	}
}

// reconcile takes s's mint lock and, under it, brings the tokens the
// broker holds to s.n: it mints the missing ones, or retires the extra
// ones one by one as jobs release them, each change in one transaction
// with the ledger's.
func (l *limits) reconcile(ctx context.Context, s *tokenSet) error {
	ch, err := l.ledger.channel(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(s.lock, false, true, true, false, nil); err != nil {
		if isCode(err, amqp.ResourceLocked) {
			return errMintLocked
		}
		return brokerError(fmt.Sprintf("declare mint lock %q", s.lock), err)
	}
	defer l.unlock(ctx, s, ch)
	absent, err := l.absent(ctx, s.token)
	if err != nil {
		return err
	}
	if err := l.declareLimitQueue(ctx, s, s.ledger, s.ledgerArg); err != nil {
		return err
	}
	if err := ch.Qos(1, 0, false); err != nil {
		return brokerError("limits: set prefetch 1", err)
	}
	if err := ch.Tx(); err != nil {
		return brokerError("limits: select transactions", err)
	}
	m, ok, minted, err := l.readLedger(ctx, ch, s, !absent)
	if err != nil {
		return err
	}
	recreated := absent && ok // the token queue was deleted: the ledger has its count
	switch {
	case !ok && !absent:
		// The ledger's message is written before the token queue is
		// first declared (below), so tokens may exist: another
		// connection holds the ledger's message, or the ledger was
		// deleted. Minting now could mint a second set.
		return fmt.Errorf("ledger %q holds no count while token queue %q exists: another connection holds its message, or it was deleted; nothing is minted until it holds one (if it was deleted, delete %q too, while none of queue %q's jobs runs, so that both are made again): %w", s.ledger, s.token, s.token, s.queue, errLedgerEmpty)
	case !ok:
		// The first reconcile of s: the ledger says 0 before the token
		// queue is declared, so that a token queue never exists with
		// its ledger empty but where something holds the ledger.
		if err := ch.PublishWithContext(ctx, "", s.ledger, false, false, ledgerMsg(0)); err != nil {
			return brokerError(fmt.Sprintf("write ledger %q", s.ledger), err)
		}
		if err := ch.TxCommit(); err != nil {
			return brokerError(fmt.Sprintf("write ledger %q", s.ledger), err)
		}
		if m, ok, minted, err = l.readLedger(ctx, ch, s, true); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("ledger %q: empty right after its first count was written: %w", s.ledger, errLedgerEmpty)
		}
	}
	if recreated && s.tokenArgs[topology.ArgQueueType] == string(runtime.QueueQuorum) {
		// The token queue was deleted. On RabbitMQ 3.10, a channel that
		// had a consumer on a quorum queue can crash, taking its
		// connection with it, when a queue of the same name is declared
		// again right after: the consumers' channels get time to forget
		// it first.
		if !l.pause(ctx, quorumRedeclareDelay) {
			return ctx.Err()
		}
	}
	if absent {
		// Declared only when absent: a declare of the queue found there
		// would make it again, empty, were it deleted in between, and
		// leave the ledger's tokens unminted. Mint publishes into a queue
		// deleted since the check are lost; the waiting jobs, cancelled by
		// the deletion, ask for another reconcile, which mints again.
		if err := l.declareLimitQueue(ctx, s, s.token, s.tokenArgs); err != nil {
			return err
		}
	}
	switch {
	case absent || minted < s.n:
		have := minted
		if absent {
			have = 0
		}
		if err := l.mint(ctx, ch, s, s.n-have, m, ok); err != nil {
			return err
		}
		l.log.Info("queuey: minted global "+string(s.kind)+" tokens", "queue", s.queue, "tokens", s.n-have, "was", minted, "now", s.n, "token_queue_recreated", recreated)
		return nil
	case minted > s.n:
		// The ledger goes back to its queue while tokens retire, for the
		// admin API to read; each retirement takes it again.
		if err := putBack(ctx, ch, s, m); err != nil {
			return err
		}
		return l.retire(ctx, ch, s, minted)
	}
	if ok {
		return putBack(ctx, ch, s, m)
	}
	return nil
}

// putBack puts the count of ledger message m of s back into its queue,
// on ch in tx mode: as a new message, published with the ack of m, not m
// returned, which a quorum queue with a delivery limit would count, and
// drop past the limit.
func putBack(ctx context.Context, ch *amqp.Channel, s *tokenSet, m amqp.Delivery) error {
	msg := ledgerMsg(0)
	msg.Body = m.Body
	if err := ch.PublishWithContext(ctx, "", s.ledger, false, false, msg); err != nil {
		return brokerError(fmt.Sprintf("put back ledger of %q", s.ledger), err)
	}
	if err := ch.Ack(m.DeliveryTag, false); err != nil {
		return brokerError(fmt.Sprintf("put back ledger of %q", s.ledger), err)
	}
	if err := ch.TxCommit(); err != nil {
		return brokerError(fmt.Sprintf("put back ledger of %q", s.ledger), err)
	}
	return nil
}

// quorumRedeclareDelay is how long a reconcile waits before it declares
// again a quorum token queue that was deleted.
const quorumRedeclareDelay = 2 * time.Second

// declareLimitQueue declares queue name of s's limit, durable with args,
// on a channel of its own (a refused declare closes its channel). A
// quorum queue that exists without the x-delivery-limit of -1 that
// RabbitMQ 4 is asked for (declared on RabbitMQ 3, or with a limit of
// its own) is taken as it is, with a warning: there the broker drops a
// token returned that many times, and the limit shrinks.
func (l *limits) declareLimitQueue(ctx context.Context, s *tokenSet, name string, args amqp.Table) error {
	err := l.declareOn(ctx, name, args)
	if err == nil || !isCode(err, amqp.PreconditionFailed) {
		return err
	}
	arg, current, present, ok := inequivalent(err)
	if !ok || arg != topology.ArgDeliveryLimit {
		return fmt.Errorf("queue %q: %s: delete it (and the other queues of this limit) so that it is declared again as queue %q now asks: %w", name, brokerReply(err), s.queue, errQueueArgs)
	}
	asIs := amqp.Table{}
	for k, v := range args {
		if k != topology.ArgDeliveryLimit {
			asIs[k] = v
		}
	}
	limit := strconv.Itoa(topology.DefaultDeliveryLimit4) + " (RabbitMQ 4's default)"
	if present {
		n, perr := strconv.Atoi(current)
		if perr != nil {
			return err
		}
		asIs[topology.ArgDeliveryLimit] = int32(n)
		limit = current
	}
	if err := l.declareOn(ctx, name, asIs); err != nil {
		return err
	}
	l.log.Warn("queuey: a global limit's quorum queue has a delivery limit: the broker drops a token returned that many times, and the limit shrinks; "+
		"to lift it, delete the limit's token and ledger queues while none of the queue's jobs runs, so that they are declared and minted again, or set delivery-limit -1 on them by policy",
		"queue", s.queue, "limit_queue", name, "delivery_limit", limit)
	return nil
}

// declareOn declares queue name, durable with args, on a channel of its
// own.
func (l *limits) declareOn(ctx context.Context, name string, args amqp.Table) error {
	ch, err := l.ledger.channel(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = ch.Close() }()
	if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		return brokerError(fmt.Sprintf("declare %q", name), err)
	}
	return nil
}

// errLedgerEmpty is a reconcile's that finds a ledger without its count
// where it cannot tell how many tokens exist.
var errLedgerEmpty = errors.New("ledger empty")

// errQueueArgs is a limit queue's, found declared otherwise than asked.
var errQueueArgs = errors.New("a limit's queue exists with other arguments")

// absent reports whether queue name does not exist, asking on a channel
// of its own (the broker closes the channel that asks for a missing one).
func (l *limits) absent(ctx context.Context, name string) (bool, error) {
	ch, err := l.ledger.channel(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = ch.Close() }()
	_, err = ch.QueueDeclarePassive(name, true, false, false, false, nil)
	switch {
	case err == nil:
		return false, nil
	case isCode(err, amqp.NotFound):
		return true, nil
	}
	return false, brokerError(fmt.Sprintf("check %q", name), err)
}

// unlock releases s's mint lock: it puts back what ch holds of the ledger
// (dropping what it did not commit), then deletes the exclusive queue, on
// ch or, when ch was closed, on a channel of its own (a lost connection
// took the lock with it already). The ledger's message is back before the
// lock goes, so the next holder of the lock finds it.
func (l *limits) unlock(ctx context.Context, s *tokenSet, ch *amqp.Channel) {
	if !ch.IsClosed() {
		// Tag 0 with multiple: every delivery ch holds.
		if ch.TxRollback() == nil && ch.Nack(0, true, true) == nil {
			_ = ch.TxCommit()
		}
		if _, err := ch.QueueDelete(s.lock, false, false, false); err == nil {
			return
		}
	}
	c, err := l.ledger.channel(ctx)
	if err != nil {
		return
	}
	defer func() { _ = c.Close() }()
	_, _ = c.QueueDelete(s.lock, false, false, false)
}

// onlyLedger makes m, of count n, the one message of s's ledger: it takes
// any other the ledger holds, keeps the one of the highest count unacked
// and acks the rest, in a transaction of its own. A ledger holds two
// messages only where a holder's connection ended as another took the
// mint lock (a worker killed with its lock and the ledger's message):
// both are counts this ledger held, and the highest is the latest, as
// only a commit that acks the old message lowers it.
func (l *limits) onlyLedger(ch *amqp.Channel, s *tokenSet, m amqp.Delivery, n int) (amqp.Delivery, bool, int, error) {
	var extra []uint64
	for {
		o, ok, err := ch.Get(s.ledger, false)
		if err != nil {
			return m, false, 0, brokerError(fmt.Sprintf("read ledger %q", s.ledger), err)
		}
		if !ok {
			break
		}
		k, err := ledgerCount(o.Body)
		if err != nil {
			return m, false, 0, fmt.Errorf("ledger %q: %w", s.ledger, err)
		}
		if k > n {
			m, n, o = o, k, m
		}
		extra = append(extra, o.DeliveryTag)
	}
	if len(extra) == 0 {
		return m, true, n, nil
	}
	for _, tag := range extra {
		if err := ch.Ack(tag, false); err != nil {
			return m, false, 0, brokerError(fmt.Sprintf("drop extra counts of ledger %q", s.ledger), err)
		}
	}
	if err := ch.TxCommit(); err != nil {
		return m, false, 0, brokerError(fmt.Sprintf("drop extra counts of ledger %q", s.ledger), err)
	}
	l.log.Warn("queuey: a global limit's ledger held more than one count; kept the highest", "queue", s.queue, "ledger", s.ledger, "count", n, "dropped", len(extra))
	return m, true, n, nil
}

// ledgerCount reads a ledger message's body: the count of tokens minted.
func ledgerCount(body []byte) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(string(body)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("holds %q, not a count of tokens: delete the limit's token and ledger queues so that they are minted again", body)
	}
	return n, nil
}

// ledgerMsg is the ledger message of n tokens minted.
func ledgerMsg(n int) amqp.Publishing {
	return amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "text/plain", Body: []byte(strconv.Itoa(n))}
}

// tokenMsg is a token of s.
func tokenMsg(s *tokenSet) amqp.Publishing {
	return amqp.Publishing{DeliveryMode: amqp.Persistent, ContentType: "text/plain",
		Body: []byte(fmt.Sprintf("queuey %s token of queue %s", s.kind, s.queue))}
}

// mint publishes k tokens of s and the ledger of s.n, and acks the old
// ledger m when there is one (had), in one transaction on ch.
func (l *limits) mint(ctx context.Context, ch *amqp.Channel, s *tokenSet, k int, m amqp.Delivery, had bool) error {
	tok := tokenMsg(s)
	for range k {
		if err := ch.PublishWithContext(ctx, "", s.token, false, false, tok); err != nil {
			return brokerError(fmt.Sprintf("mint into %q", s.token), err)
		}
	}
	if err := ch.PublishWithContext(ctx, "", s.ledger, false, false, ledgerMsg(s.n)); err != nil {
		return brokerError(fmt.Sprintf("write ledger %q", s.ledger), err)
	}
	if had {
		if err := ch.Ack(m.DeliveryTag, false); err != nil {
			return brokerError(fmt.Sprintf("ack old ledger of %q", s.ledger), err)
		}
	}
	if err := ch.TxCommit(); err != nil {
		return brokerError(fmt.Sprintf("commit %d tokens into %q", k, s.token), err)
	}
	return nil
}

// retire takes s's tokens as they come free and drops each, with the
// ledger's count, in a transaction of its own, until the ledger's count,
// minted now, is s.n. Jobs keep running meanwhile; the limit falls as
// tokens retire. The ledger stays in its queue between retirements.
func (l *limits) retire(ctx context.Context, ch *amqp.Channel, s *tokenSet, minted int) error {
	l.log.Info("queuey: retiring global "+string(s.kind)+" tokens as they come free", "queue", s.queue, "was", minted, "now", s.n)
	msgs, err := ch.Consume(s.token, "", false, false, false, false, nil)
	if err != nil {
		return brokerError(fmt.Sprintf("consume %q to retire tokens", s.token), err)
	}
	for minted > s.n {
		var d amqp.Delivery
		select {
		case <-ctx.Done():
			return ctx.Err()
		case got, ok := <-msgs:
			if !ok {
				return fmt.Errorf("token queue %q: consumer ended while retiring tokens (%d minted, want %d)", s.token, minted, s.n)
			}
			d = got
		}
		m, ok, count, err := l.readLedger(ctx, ch, s, true)
		switch {
		case err != nil:
			return err
		case !ok:
			return fmt.Errorf("ledger %q: empty while retiring tokens", s.ledger)
		case count <= s.n:
			return fmt.Errorf("ledger %q: says %d while this worker retires tokens down to %d", s.ledger, count, s.n)
		}
		minted = count
		if err := ch.Ack(d.DeliveryTag, false); err != nil {
			return brokerError(fmt.Sprintf("retire a token of %q", s.token), err)
		}
		if err := ch.PublishWithContext(ctx, "", s.ledger, false, false, ledgerMsg(minted-1)); err != nil {
			return brokerError(fmt.Sprintf("write ledger %q", s.ledger), err)
		}
		if err := ch.Ack(m.DeliveryTag, false); err != nil {
			return brokerError(fmt.Sprintf("ack old ledger of %q", s.ledger), err)
		}
		if err := ch.TxCommit(); err != nil {
			return brokerError(fmt.Sprintf("commit a token retired from %q", s.token), err)
		}
		minted--
	}
	l.log.Info("queuey: retired global "+string(s.kind)+" tokens", "queue", s.queue, "now", s.n)
	return nil
}

// ledgerReads is how many times readLedger looks for a ledger message
// that may be held for a moment by a reader, about 200 ms apart, before
// it reports the ledger empty.
const ledgerReads = 5

// readLedger takes s's ledger message on ch, unacked, and reads its count:
// ok is false, and the count 0, when the ledger queue holds none. Where
// the token queue exists (tokens set), an empty ledger queue is looked at
// again a few times first: a reader may hold the message for a moment.
func (l *limits) readLedger(ctx context.Context, ch *amqp.Channel, s *tokenSet, tokens bool) (amqp.Delivery, bool, int, error) {
	for i := range ledgerReads {
		m, ok, err := ch.Get(s.ledger, false)
		if err != nil {
			return m, false, 0, brokerError(fmt.Sprintf("read ledger %q", s.ledger), err)
		}
		if ok {
			n, err := ledgerCount(m.Body)
			if err != nil {
				return m, false, 0, fmt.Errorf("ledger %q: %w", s.ledger, err)
			}
			return l.onlyLedger(ch, s, m, n)
		}
		if !tokens || i == ledgerReads-1 || !l.pause(ctx, 200*time.Millisecond) {
			break
		}
	}
	return amqp.Delivery{}, false, 0, ctx.Err()
}
