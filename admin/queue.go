package admin

import "context"

// QueueAdmin is implemented by backends that can empty and delete a
// queue. It is an optional capability beside runtime.Backend.
type QueueAdmin interface {
	// PurgeQueue deletes the ready jobs of queue, those not handed to a
	// consumer, and returns how many it deleted. Jobs in flight, waiting
	// and dead stay. A queue that does not exist is runtime.ErrUnknownQueue.
	PurgeQueue(ctx context.Context, queue string) (int, error)
	// DeleteQueue deletes queue and its ready jobs, and with
	// opts.WithWaits also its dead letters, its hold queues and its pause
	// marker. It refuses with ErrQueueInUse while consumers are attached to
	// queue, unless opts.Force. It returns each queue it deleted with the
	// jobs that went with it, also when it fails midway. A queue that does
	// not exist is runtime.ErrUnknownQueue. With opts.WithWaits, a backend
	// that cannot list the hold queues (ErrCannotList) deletes nothing. A
	// hold queue or dead-letter queue of queue is known by what the backend
	// declared it with, never by its name alone: a queue named like one
	// that is not one is kept, and reported in DeleteResult.Kept.
	DeleteQueue(ctx context.Context, queue string, opts DeleteQueueOptions) (DeleteResult, error)
}
