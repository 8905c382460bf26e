package admin

import (
	"context"
	"errors"
)

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
	// that cannot list the hold queues (ErrCannotList) deletes nothing.
	DeleteQueue(ctx context.Context, queue string, opts DeleteQueueOptions) ([]DeletedQueue, error)
}

// DeleteQueueOptions says what QueueAdmin.DeleteQueue deletes besides the
// queue.
type DeleteQueueOptions struct {
	// WithWaits deletes the queue's dead letters, hold queues and pause
	// marker too.
	WithWaits bool
	// Force deletes the queue even while consumers are attached to it.
	Force bool
}

// DeletedQueue is one queue a delete removed, and how many jobs went with
// it.
type DeletedQueue struct {
	Name string `json:"name"`
	Jobs int    `json:"jobs"`
}

// ErrQueueInUse is returned by QueueAdmin.DeleteQueue for a queue that
// consumers are attached to, unless told to force.
var ErrQueueInUse = errors.New("queuey: queue in use by consumers")
