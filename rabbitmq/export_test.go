package rabbitmq

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// PublishRaw publishes body to queue as it is, without properties or
// headers, confirmed and mandatory: the way a foreign producer might. It
// puts messages that are not envelopes on a queue, for tests of poison
// handling (backendtest.Features.PublishRaw).
func (b *Backend) PublishRaw(ctx context.Context, queue string, body []byte) error {
	if err := b.life.refuse(fmt.Sprintf("publish raw to %q", queue)); err != nil {
		return err
	}
	return b.pub.publishSerial(ctx, "", queue, amqp.Publishing{Body: body})
}

// publishSerial is publish without a correlation header: on a channel of
// its own that carries this one publish, so that a return pairs with it.
func (p *publisher) publishSerial(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	ch, conn, err := p.conn.channelConn(ctx)
	if err != nil {
		return err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		return brokerError("rabbitmq: put channel in confirm mode", err)
	}
	pc := newPubChannel(ch, p.conn, p.log)
	pc.solo = true
	pc.limits = p.limitsOn(conn)
	defer func() {
		_ = ch.Close()
		<-pc.done
	}()
	return pc.publish(ctx, exchange, key, msg, true)
}

// Connections returns b's publishing and consuming AMQP connections as they
// are now, for tests that check they survive something.
func Connections(b *Backend) (publish, consume *amqp.Connection) {
	b.pubConn.mu.Lock()
	publish = b.pubConn.conn
	b.pubConn.mu.Unlock()
	first := b.ops.conn // the first consuming connection
	first.mu.Lock()
	consume = first.conn
	first.mu.Unlock()
	return publish, consume
}

// SetBrokerVersion makes b act as if the broker were of version v, for
// tests of version-dependent declares on whatever broker runs.
func SetBrokerVersion(b *Backend, v string) {
	ver, err := topology.ParseVersion(v)
	if err != nil {
		panic(err)
	}
	b.declares.version = ver
}

// ConsumeConnections returns the live connections b consumes on, the first
// first.
func ConsumeConnections(b *Backend) []*amqp.Connection { return b.cons.connections() }

// SetChannelsPerConnection makes b's consuming connections hold at most n
// long-lived channels each, for tests that spread consumers over a few.
func SetChannelsPerConnection(b *Backend, n int) {
	b.cons.mu.Lock()
	b.cons.perConn = n
	b.cons.mu.Unlock()
}

// LeaseQueue is leaseQueue: the queue that holds the lease called name.
func LeaseQueue(name string) string { return leaseQueue(name) }

// PausedMarker is pausedMarker: the queue whose existence marks queue
// paused.
func PausedMarker(queue string) string { return pausedMarker(queue) }

// LimitQueues returns the names of every queue that holds queue q's
// global limits, for tests to inspect and delete: the Limit's token,
// ledger and lock queues, the Rate's, and the Rate's return queues.
func LimitQueues(q string) (limitToken, limitLedger, rateToken, rateLedger string, all []string) {
	all = []string{limitTokenQueue(q), limitLedgerQueue(q), limitLockQueue(q), rateTokenQueue(q), rateLedgerQueue(q), rateLockQueue(q)}
	for _, per := range []time.Duration{time.Second, time.Minute, time.Hour} {
		all = append(all, rateReturnQueue(q, per))
	}
	return limitTokenQueue(q), limitLedgerQueue(q), rateTokenQueue(q), rateLedgerQueue(q), all
}

// KeyLeaseQueue is keyLeaseQueue: the lease queue of limit key value key
// of queue q.
func KeyLeaseQueue(q, key string) string { return keyLeaseQueue(q, key) }

// AwaitReconciled waits until b has reconciled queue q's Limit and Rate
// (those it runs) once, or ctx ends.
func AwaitReconciled(ctx context.Context, b *Backend, q string) error {
	for _, token := range []string{limitTokenQueue(q), rateTokenQueue(q)} {
		b.limits.mu.Lock()
		s := b.limits.sets[token]
		b.limits.mu.Unlock()
		if s == nil {
			continue
		}
		select {
		case <-s.reconciled:
		case <-ctx.Done():
			return fmt.Errorf("%s of %q not reconciled: %w", s.kind, q, ctx.Err())
		}
	}
	return nil
}

// KeyLeaseQueuePrefix is keyLeaseQueuePrefix: what the lease queues of
// queue q's limit keys are named with first.
func KeyLeaseQueuePrefix(q string) string { return keyLeaseQueuePrefix(q) }

// Reconciles reports whether b runs a reconcile of queue q's Limit or
// Rate: whether it consumed q or asked for a permit of it.
func Reconciles(b *Backend, q string) bool {
	b.limits.mu.Lock()
	defer b.limits.mu.Unlock()
	return b.limits.sets[limitTokenQueue(q)] != nil || b.limits.sets[rateTokenQueue(q)] != nil
}
