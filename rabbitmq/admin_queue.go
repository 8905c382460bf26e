package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

var _ admin.QueueAdmin = (*Backend)(nil)

// PurgeQueue deletes the ready jobs of queue with one queue.purge, and
// returns the count the broker confirms. Unacked jobs stay with their
// consumers.
func (b *Backend) PurgeQueue(ctx context.Context, queue string) (int, error) {
	return b.ops.purgeQueue(ctx, queue)
}

// purgeQueue is Backend.PurgeQueue.
func (o *ops) purgeQueue(ctx context.Context, queue string) (int, error) {
	if _, err := o.mustExist(ctx, "purge", queue); err != nil {
		return 0, err
	}
	var n int
	err := o.onChannel(ctx, func(ch *amqp.Channel) error {
		var err error
		n, err = ch.QueuePurge(queue, false)
		return err
	})
	if err != nil {
		return 0, brokerError(fmt.Sprintf("purge queue %q", queue), err)
	}
	return n, nil
}

// DeleteQueue deletes queue with queue.delete. Unless opts.Force, it
// refuses when a passive declare just before finds consumers attached (a
// quorum queue does not take queue.delete's if-unused flag; a consumer
// that attaches in between is cancelled by the delete). With
// opts.WithWaits it deletes its dead-letter queue, its hold queues and its
// pause marker, then tells workers the queue is no longer paused. Hold
// queues and the dead-letter queue are read from the management API's
// list, with their arguments: a hold queue is one declared as this
// backend declares them (topology.Names.IdentifyHold), and a dead-letter
// queue one that dead-letters nowhere, as a work queue always does. A
// queue named like either that is not one is kept and reported.
func (b *Backend) DeleteQueue(ctx context.Context, queue string, opts admin.DeleteQueueOptions) (admin.DeleteResult, error) {
	return b.ops.deleteQueue(ctx, queue, opts)
}

// deleteQueue is Backend.DeleteQueue.
func (o *ops) deleteQueue(ctx context.Context, queue string, opts admin.DeleteQueueOptions) (admin.DeleteResult, error) {
	var res admin.DeleteResult
	// With its waits, the hold queues are listed before anything is
	// deleted: a delete that cannot find them deletes nothing.
	var listed []mgmt.Queue
	if opts.WithWaits {
		var err error
		if listed, err = o.listQueues(ctx); err != nil {
			return res, fmt.Errorf("delete queue %q with its waits: its hold queues cannot be listed, so nothing was deleted: %w", queue, err)
		}
	}
	q, err := o.mustExist(ctx, "delete", queue)
	if err != nil && !(opts.WithWaits && errors.Is(err, errs.ErrUnknownQueue)) {
		return res, err
	}
	if err == nil {
		if q.Consumers > 0 && !opts.Force {
			return res, fmt.Errorf("delete queue %q: %w: %d attached", queue, admin.ErrQueueInUse, q.Consumers)
		}
		n, err := o.deleteOne(ctx, queue)
		if err != nil {
			return res, brokerError(fmt.Sprintf("delete queue %q", queue), err)
		}
		res.Deleted = append(res.Deleted, admin.DeletedQueue{Name: queue, Jobs: n})
	}
	if !opts.WithWaits {
		return res, nil
	}
	return res, o.deleteWaits(ctx, queue, listed, &res)
}

// deleteWaits deletes what goes with queue, found in listed or by name:
// its hold queues, its dead-letter queue and its paused marker, whose
// delete resumes it. A queue only named like a hold queue of queue is
// kept, and counted in res.Kept.
func (o *ops) deleteWaits(ctx context.Context, queue string, listed []mgmt.Queue, res *admin.DeleteResult) error {
	others, kept := o.waitsOf(queue, listed)
	marker, merr := o.pauses.marker(queue)
	if merr == nil {
		others = append(others, marker)
	}
	for _, name := range slices.Compact(others) {
		_, found, err := inspectQueue(ctx, o.life, o.conn, name)
		if err != nil {
			return fmt.Errorf("delete queue %q: %w", queue, err)
		}
		if !found {
			continue
		}
		if name == o.names.Dead(queue).Name {
			if err := o.announceTake(ctx, queue); err != nil {
				return fmt.Errorf("delete queue %q: %w", queue, err)
			}
		}
		n, err := o.deleteOne(ctx, name)
		if err != nil {
			return brokerError(fmt.Sprintf("delete queue %q: delete %q", queue, name), err)
		}
		res.Deleted = append(res.Deleted, admin.DeletedQueue{Name: name, Jobs: n})
		if name == marker {
			if err := o.pauses.notify(ctx, "resume", queue); err != nil {
				return err
			}
		}
	}
	for _, k := range kept {
		// The count the delete saw, exact: the list's lags.
		if c, found, err := inspectQueue(ctx, o.life, o.conn, k.Name); err == nil && found {
			k.Jobs = c.Messages
		}
		res.Kept = append(res.Kept, k)
	}
	return nil
}

// deleteOne deletes the queue called name and returns how many messages
// it held.
func (o *ops) deleteOne(ctx context.Context, name string) (int, error) {
	var n int
	err := o.onChannel(ctx, func(ch *amqp.Channel) error {
		var err error
		n, err = ch.QueueDelete(name, false, false, false)
		return err
	})
	return n, err
}

// waitsOf returns, from the management API's list, the dead-letter queue
// and the hold queues of queue, and the queues named like them that are
// not them.
func (o *ops) waitsOf(queue string, listed []mgmt.Queue) (waits []string, kept []admin.KeptQueue) {
	dead := o.names.Dead(queue).Name
	for _, q := range listed {
		switch {
		case q.Name == dead && !o.opts.NoDeadLetterQueues:
			if rk, ok := q.Arguments[topology.ArgDeadLetterRoutingKey]; ok {
				kept = append(kept, admin.KeptQueue{Name: q.Name, Jobs: q.Ready, Why: fmt.Sprintf("not the dead-letter queue of %q: it dead-letters to %v, as a work queue does", queue, rk)})
				continue
			}
			waits = append(waits, q.Name)
		default:
			if like, named := o.names.NamedLikeHold(q.Name); !named || like.Queue != queue {
				continue
			}
			if _, ok, why := o.names.IdentifyHold(q.Name, q.Type, q.Arguments); !ok {
				kept = append(kept, admin.KeptQueue{Name: q.Name, Jobs: q.Ready, Why: fmt.Sprintf("not a hold queue of %q: %s", queue, why)})
				continue
			}
			waits = append(waits, q.Name)
		}
	}
	// The dead-letter queue first, as before the hold queues.
	slices.SortStableFunc(waits, func(a, c string) int {
		switch {
		case a == dead:
			return -1
		case c == dead:
			return 1
		}
		return 0
	})
	return waits, kept
}

// mustExist returns queue as a passive declare finds it, or
// runtime.ErrUnknownQueue.
func (o *ops) mustExist(ctx context.Context, verb, queue string) (amqp.Queue, error) {
	q, found, err := inspectQueue(ctx, o.life, o.conn, queue)
	if err != nil {
		return q, fmt.Errorf("%s queue %q: %w", verb, queue, err)
	}
	if !found {
		return q, absentQueue(verb, queue)
	}
	return q, nil
}

// onChannel runs fn on a channel of its own on the consuming connection,
// closed after, so that a refusal closes nothing else.
func (o *ops) onChannel(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	return fn(ch)
}
