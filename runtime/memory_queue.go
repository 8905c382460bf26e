package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuey/queuey/internal/adminapi"
)

// PurgeQueue deletes queue's ready jobs and returns how many. Jobs handed
// to a consumer, waiting or dead stay.
func (b *MemoryBackend) PurgeQueue(ctx context.Context, queue string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.unlock()
	q, err := b.queueLocked(queue)
	if err != nil {
		return 0, err
	}
	n := q.ready.Len()
	clear(q.ready)
	q.ready = q.ready[:0]
	return n, nil
}

// errKeepsWaits refuses a delete without opts.WithWaits of a memory queue
// with dead letters or waits: they live inside the queue here, so there
// is no deleting it without them.
var errKeepsWaits = errors.New("the in-memory backend keeps a queue's dead letters and waits inside the queue, so deleting it would delete them too")

// DeleteQueue deletes queue with its ready jobs, and with opts.WithWaits
// its dead letters, its waits and its paused state too. The in-memory
// backend keeps dead letters and waits inside their queue: without
// opts.WithWaits, a queue that has any is refused, and nothing is
// deleted. With opts.Force, its consumers end with an error (their
// unsettled jobs are gone with the queue), as a broker cancels consumers
// of a deleted queue. The result names the queue, then "QUEUE.dead" for
// its dead letters and "QUEUE retry timers" / "QUEUE deferred timers" for
// its waits, when asked to delete them.
func (b *MemoryBackend) DeleteQueue(ctx context.Context, queue string, opts adminapi.DeleteQueueOptions) (adminapi.DeleteResult, error) {
	deleted, err := b.deleteQueue(ctx, queue, opts)
	return adminapi.DeleteResult{Deleted: deleted}, err
}

// deleteQueue deletes queue as DeleteQueue does, and returns what it
// deleted. Its waits are its own, never named like another queue.
func (b *MemoryBackend) deleteQueue(ctx context.Context, queue string, opts adminapi.DeleteQueueOptions) ([]adminapi.DeletedQueue, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.unlock()
	q, err := b.queueLocked(queue)
	if err != nil {
		return nil, err
	}
	consumers, unacked := 0, 0
	for _, s := range q.subs {
		unacked += len(s.unacked)
		if !s.stopped {
			consumers++
		}
	}
	if consumers > 0 && !opts.Force {
		return nil, fmt.Errorf("delete queue %q: %d consumer(s) attached: %w", queue, consumers, adminapi.ErrQueueInUse)
	}
	held := map[adminapi.HoldKind]int{}
	for _, h := range b.timers {
		if h.queue == queue {
			held[h.kind]++
		}
	}
	if !opts.WithWaits && (len(q.dead) > 0 || len(held) > 0) {
		return nil, fmt.Errorf("delete queue %q: %w: dead letters: %d, waits: %d; delete it with its waits, or re-drive or purge its dead letters and let its waits end first",
			queue, errKeepsWaits, len(q.dead), held[adminapi.HoldRetry]+held[adminapi.HoldDeferred])
	}
	for _, s := range q.subs {
		s.closeLocked(false)
		s.err = fmt.Errorf("consumer of %q: the queue was deleted", queue)
	}
	q.subs = nil
	delete(b.queues, queue)
	deleted := []adminapi.DeletedQueue{{Name: queue, Jobs: q.ready.Len() + unacked}}
	if !opts.WithWaits {
		return deleted, nil
	}
	deleted = append(deleted, adminapi.DeletedQueue{Name: queue + ".dead", Jobs: len(q.dead)})
	for t, h := range b.timers {
		if h.queue == queue {
			t.Stop()
			delete(b.timers, t)
		}
	}
	for _, kind := range []adminapi.HoldKind{adminapi.HoldRetry, adminapi.HoldDeferred} {
		if n := held[kind]; n > 0 {
			deleted = append(deleted, adminapi.DeletedQueue{Name: queue + " " + string(kind) + " timers", Jobs: n})
		}
	}
	if b.pauses.paused[queue] {
		delete(b.pauses.paused, queue)
		for _, c := range b.pauses.watchers[queue] {
			sendLatest(c, false)
		}
	}
	return deleted, nil
}
