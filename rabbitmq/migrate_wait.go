package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// migrationRecheck is how often a declare waiting out a migration
// declares again.
const migrationRecheck = time.Second

// awaitMigration handles a declare of q refused with err
// (runtime.ErrQueueMismatch). While q is being migrated (its temporary
// queue exists, or its dead-letter queue's), it logs so once and declares
// again every migrationRecheck, for up to Options.MigrationWait: nil once
// a declare is taken. Otherwise, or when the wait ends first, it returns
// err with every argument that differs (read through the management API
// where it answers) and the command that migrates the queue.
func (b *Backend) awaitMigration(ctx context.Context, q runtime.QueueConfig, err error) error {
	if b.opts.MigrationWait > 0 && b.migrating(ctx, q) {
		b.log.Warn("queuey: queue is being migrated to other arguments (queuey queues migrate); waiting for the migration to end before declaring it",
			"queue", q.Name, "max_wait", b.opts.MigrationWait)
		wctx, cancel := context.WithTimeout(ctx, b.opts.MigrationWait)
		defer cancel()
		tick := time.NewTicker(migrationRecheck)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w (waited %v for its migration to end: run queuey queues migrate %s again to finish it)", b.explainMismatch(ctx, q, err), b.opts.MigrationWait, q.Name)
			case <-tick.C:
			}
			derr := b.declares.queue(wctx, q)
			if derr == nil {
				b.log.Info("queuey: queue migrated; declared", "queue", q.Name)
				return nil
			}
			if !errors.Is(derr, runtime.ErrQueueMismatch) && wctx.Err() == nil {
				return derr
			}
			if derr != nil && wctx.Err() == nil && !b.migrating(wctx, q) {
				return b.explainMismatch(ctx, q, derr)
			}
		}
	}
	return b.explainMismatch(ctx, q, err)
}

// migrating reports whether q is being migrated: the temporary queue of
// it or of its dead-letter queue exists.
func (b *Backend) migrating(ctx context.Context, q runtime.QueueConfig) bool {
	names := []string{topology.Migrating(q.Name)}
	if !b.opts.NoDeadLetterQueues {
		names = append(names, topology.Migrating(b.declares.deadQueue(q).Name))
	}
	for _, n := range names {
		if _, found, err := inspectQueue(ctx, b.life, b.ops.conn, n); err == nil && found {
			return true
		}
	}
	return false
}

// explainMismatch adds to err every argument of q that differs, where the
// management API answers, and the command that migrates q.
func (b *Backend) explainMismatch(ctx context.Context, q runtime.QueueConfig, err error) error {
	diff := ""
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c, cerr := b.ops.api.client(cctx); cerr == nil {
		if d, derr := b.drift(cctx, c, q); derr == nil && len(d.Diffs) > 0 {
			diff = "; every difference: " + d.Summary()
		}
	}
	return fmt.Errorf("%w%s. To move its jobs into the queue declared with the new arguments, losing none: queuey queues migrate %s --pkg <the packages that declare it> (see docs/operating.md)", err, diff, q.Name)
}
