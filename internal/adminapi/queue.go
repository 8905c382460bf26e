package adminapi

import "errors"

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
