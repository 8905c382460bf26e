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
	// that cannot list the hold queues (ErrCannotList) deletes nothing. A
	// hold queue or dead-letter queue of queue is known by what the backend
	// declared it with, never by its name alone: a queue named like one
	// that is not one is kept, and reported in DeleteResult.Kept.
	DeleteQueue(ctx context.Context, queue string, opts DeleteQueueOptions) (DeleteResult, error)
}

// DeleteResult is what QueueAdmin.DeleteQueue did.
type DeleteResult struct {
	// Deleted are the queues deleted, in the order they were.
	Deleted []DeletedQueue `json:"deleted"`
	// Kept are queues named like the queue's dead-letter or hold queues
	// that are not (another application's work queue, say), left as they
	// are.
	Kept []KeptQueue `json:"kept"`
}

// KeptQueue is a queue a delete left because it is not what its name
// suggests.
type KeptQueue struct {
	Name string `json:"name"`
	// Jobs counts its ready jobs when the delete looked.
	Jobs int `json:"jobs"`
	// Why says what it is instead.
	Why string `json:"why"`
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
