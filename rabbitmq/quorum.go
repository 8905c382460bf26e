package rabbitmq

import (
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// holdQueue returns the hold queue of q for a wait of delay: a quorum one
// on the bounded ladder of topology.QuorumRung when q is a quorum queue, so
// waits are replicated like q, and a classic one otherwise.
func (b *Backend) holdQueue(q runtime.QueueConfig, kind admin.HoldKind, delay time.Duration) (topology.Queue, error) {
	if q.QueueType == runtime.QueueQuorum {
		h, _, err := b.names.QuorumHold(q.Name, kind, delay, b.opts.Granularity)
		return h, err
	}
	h, _, err := b.names.Hold(q.Name, kind, delay, b.opts.Granularity)
	return h, err
}

// deadQueue returns the dead-letter queue of q: quorum when q is.
func (b *Backend) deadQueue(q runtime.QueueConfig) topology.Queue {
	if q.QueueType == runtime.QueueQuorum {
		return b.names.QuorumDead(q.Name)
	}
	return b.names.Dead(q.Name)
}

// declareDead declares the dead-letter queue of q. A quorum q whose
// dead-letter queue already exists as a classic queue (declared by another
// program, or by hand) keeps it: dead jobs still land there, unreplicated, and
// a warning, once per queue, says how to migrate. Any other refusal is
// returned as the broker's error.
func (b *Backend) declareDead(ctx context.Context, q runtime.QueueConfig) error {
	dead := b.deadQueue(q)
	err := b.declareUnlimited(ctx, dead)
	if err == nil || q.QueueType != runtime.QueueQuorum || !isCode(err, amqp.PreconditionFailed) {
		return err
	}
	// A declare that matches it again is the test that it is a classic
	// queue.
	if b.decl.declare(ctx, b.names.Dead(q.Name)) != nil {
		return err
	}
	b.warnOnce("dead:"+dead.Name, fmt.Sprintf("queuey: the dead-letter queue of quorum queue %q is a classic queue; it is kept, so dead jobs are not replicated. "+
		"To migrate: stop the producers and workers of %q, move the messages of %q elsewhere (a shovel, or read and re-publish them), delete %q, and start them again: the next declare makes it a quorum queue",
		q.Name, q.Name, dead.Name, dead.Name), "queue", q.Name, "dead_letter_queue", dead.Name)
	return nil
}

// warnOnce logs msg at warning level the first time key is seen by this
// backend.
func (b *Backend) warnOnce(key, msg string, args ...any) {
	if _, seen := b.warned.LoadOrStore(key, struct{}{}); !seen {
		b.log.Warn(msg, args...)
	}
}
