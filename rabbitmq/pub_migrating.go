package rabbitmq

import (
	"context"
	"errors"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// Publishing to a queue being migrated (MigrateQueue).
//
// A publish to a queue that is sealed (nacked) or gone for a moment
// (returned) goes to its temporary queue, "<q>.migrating", which the
// migration moves into the queue. From then on this backend publishes the
// queue's jobs straight to the temporary queue, until that refuses one
// (sealed or gone: the migration is ending, and the queue is back): so a
// producer that publishes steadily has stopped publishing to the old
// queue long before the migration deletes it. The broker confirms a
// publish that reaches a queue as it is deleted, and the job goes with
// the queue; a producer's first publish since the seal, arriving in that
// instant, is the one a migration can still lose.

// migratingTries bounds how many times a publish that came back
// unroutable, or nacked, goes to a migrating queue's temporary queue and
// back.
const migratingTries = 3

// migratingErr says a publish to a queue may have met it mid-migration: it
// came back unroutable (the queue is gone for a moment), or was nacked
// (the queue is sealed).
func migratingErr(err error) bool {
	return errors.Is(err, ErrUnroutable) || errors.Is(err, ErrNacked)
}

// migratingQueues are the queues whose publishes go to their temporary
// queue. The zero value is ready.
type migratingQueues struct{ m sync.Map }

// target is where a publish to queue goes first.
func (q *migratingQueues) target(queue string) string {
	if _, ok := q.m.Load(queue); ok {
		return topology.Migrating(queue)
	}
	return queue
}

func (q *migratingQueues) set(queue string)   { q.m.Store(queue, struct{}{}) }
func (q *migratingQueues) clear(queue string) { q.m.Delete(queue) }

// publishAgain publishes msg to queue, its temporary queue having refused
// it (or not being in use), and on to the temporary queue when queue
// refuses it in turn.
func (b *Backend) publishAgain(ctx context.Context, queue string, msg amqp.Publishing) error {
	b.moving.clear(queue)
	err := b.pub.publish(ctx, queue, msg)
	if migratingErr(err) {
		err = b.publishMigrating(ctx, queue, msg, err)
	}
	return err
}

// publishMigrating publishes msg, which queue returned as unroutable or
// nacked (err), to the queue that holds queue's jobs while it is migrated,
// where the migration moves it into queue, and sends queue's next
// publishes there too; it publishes to queue again when the temporary
// queue is sealed, or gone after an unroutable publish (the migration is
// ending). It returns err when neither takes it: no migration is under
// way.
func (b *Backend) publishMigrating(ctx context.Context, queue string, msg amqp.Publishing, err error) error {
	for range migratingTries {
		terr := b.pub.publish(ctx, topology.Migrating(queue), msg)
		switch {
		case terr == nil:
			b.moving.set(queue)
			return nil
		case errors.Is(terr, ErrNacked):
			// Sealed: the migration is moving its jobs back into
			// queue, declared again by now.
		case !errors.Is(terr, ErrUnroutable):
			return terr
		case errors.Is(err, ErrNacked):
			return err
		}
		b.moving.clear(queue)
		if err = b.pub.publish(ctx, queue, msg); !migratingErr(err) {
			return err
		}
	}
	return err
}
