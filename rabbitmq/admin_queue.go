package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"slices"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/queueerr"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

var _ admin.QueueAdmin = (*Backend)(nil)

// PurgeQueue deletes the ready jobs of queue with one queue.purge, and
// returns the count the broker confirms. Unacked jobs stay with their
// consumers.
func (b *Backend) PurgeQueue(ctx context.Context, queue string) (int, error) {
	if _, err := b.mustExist(ctx, "purge", queue); err != nil {
		return 0, err
	}
	var n int
	err := b.onChannel(ctx, func(ch *amqp.Channel) error {
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
// that attaches in between is cancelled by the delete). With opts.WithWaits it deletes its dead-letter queue, its hold
// queues (listed through the management API) and its pause marker, then
// tells workers the queue is no longer paused.
func (b *Backend) DeleteQueue(ctx context.Context, queue string, opts admin.DeleteQueueOptions) ([]admin.DeletedQueue, error) {
	var out []admin.DeletedQueue
	// With its waits, the hold queues are listed before anything is
	// deleted: a delete that cannot find them deletes nothing.
	var listed []mgmt.Queue
	if opts.WithWaits {
		var err error
		if listed, err = b.listQueues(ctx); err != nil {
			return nil, fmt.Errorf("delete queue %q with its waits: its hold queues cannot be listed, so nothing was deleted: %w", queue, err)
		}
	}
	q, err := b.mustExist(ctx, "delete", queue)
	if err != nil && !(opts.WithWaits && errors.Is(err, queueerr.ErrUnknownQueue)) {
		return nil, err
	}
	if err == nil {
		if q.Consumers > 0 && !opts.Force {
			return nil, fmt.Errorf("delete queue %q: %w: %d attached", queue, admin.ErrQueueInUse, q.Consumers)
		}
		var n int
		err := b.onChannel(ctx, func(ch *amqp.Channel) error {
			var err error
			n, err = ch.QueueDelete(queue, false, false, false)
			return err
		})
		if err != nil {
			return nil, brokerError(fmt.Sprintf("delete queue %q", queue), err)
		}
		out = append(out, admin.DeletedQueue{Name: queue, Jobs: n})
	}
	if !opts.WithWaits {
		return out, nil
	}
	var others []string
	if !b.opts.NoDeadLetterQueues {
		others = append(others, b.names.Dead(queue).Name)
	}
	re := b.holdRE()
	for _, q := range listed {
		if m := re.FindStringSubmatch(q.Name); m != nil && m[1] == queue {
			others = append(others, q.Name)
		}
	}
	marker, merr := b.marker(queue)
	if merr == nil {
		others = append(others, marker)
	}
	for _, name := range slices.Compact(others) {
		_, found, err := b.inspect(ctx, name)
		if err != nil {
			return out, fmt.Errorf("delete queue %q: %w", queue, err)
		}
		if !found {
			continue
		}
		if name == b.names.Dead(queue).Name {
			if err := b.announceTake(ctx, queue); err != nil {
				return out, fmt.Errorf("delete queue %q: %w", queue, err)
			}
		}
		var n int
		if err := b.onChannel(ctx, func(ch *amqp.Channel) error {
			var err error
			n, err = ch.QueueDelete(name, false, false, false)
			return err
		}); err != nil {
			return out, brokerError(fmt.Sprintf("delete queue %q: delete %q", queue, name), err)
		}
		out = append(out, admin.DeletedQueue{Name: name, Jobs: n})
		if name == marker {
			if err := b.notify(ctx, "resume", queue); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// mustExist returns queue as a passive declare finds it, or
// runtime.ErrUnknownQueue.
func (b *Backend) mustExist(ctx context.Context, verb, queue string) (amqp.Queue, error) {
	q, found, err := b.inspect(ctx, queue)
	if err != nil {
		return q, fmt.Errorf("%s queue %q: %w", verb, queue, err)
	}
	if !found {
		return q, fmt.Errorf("%s: %w", verb, queueerr.Unknown(queue, "does not exist on the broker"))
	}
	return q, nil
}

// onChannel runs fn on a channel of its own on the consuming connection,
// closed after, so that a refusal closes nothing else.
func (b *Backend) onChannel(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	ch, err := b.conConn.channel(ctx)
	if err != nil {
		return err
	}
	defer ch.Close()
	return fn(ch)
}
