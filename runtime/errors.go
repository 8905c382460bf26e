package runtime

import (
	"errors"
	"fmt"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/waits"
)

var (
	// ErrUnknownQueue is returned for a publish onto a queue that does not
	// exist: on the memory backend, one not declared through it; on
	// RabbitMQ, one missing on the broker (a wait checks that its queue
	// exists before it is held, since the broker drops the expiry of a wait
	// into a missing queue without a word).
	ErrUnknownQueue = errs.ErrUnknownQueue
	// ErrDelayTooLong is returned for a wait longer than MaxDeferral after
	// rounding up to the backend's granularity. Waits are refused, never
	// clamped: releasing a job early is the one thing a wait must not do.
	ErrDelayTooLong = waits.ErrTooLong
	// ErrInvalidConfig is wrapped by every QueueConfig validation error.
	ErrInvalidConfig = errors.New("queuey: invalid queue config")
	// ErrInvalidOption is wrapped by errors about enqueue and worker options.
	ErrInvalidOption = errors.New("queuey: invalid option")
	// ErrKindConflict is returned by Declare for a queue already declared
	// through the same backend for another job kind, and by an enqueue of
	// one kind onto a queue its producer declared for another, before
	// anything is published.
	ErrKindConflict = errs.ErrKindConflict
	// ErrJobType is returned by Enqueue, EnqueueMany and Worker.Run (for
	// Handle and Periodic) when the Go type of the job is not the queue's
	// kind: the job would reach a handler of another type.
	ErrJobType = errors.New("queuey: job type is not the queue's kind")
	// ErrNoHandlers is returned by Worker.Run when no handler was
	// registered: there is nothing to run.
	ErrNoHandlers = errors.New("queuey: no handlers registered")
	// ErrWorkerRunning is returned by a call of Worker.Run while an
	// earlier call runs.
	ErrWorkerRunning = errors.New("queuey: worker already running")
	// ErrWorkerDone is returned by a call of Worker.Run after an earlier
	// call returned: a worker runs once.
	ErrWorkerDone = errors.New("queuey: worker has run and cannot run again; make a new Worker")
	// ErrClosed is returned by a backend, subscription or delivery after
	// Close.
	ErrClosed = errors.New("queuey: closed")
	// ErrCannotConsume is returned by a backend's Consume for a queue
	// that trying again would not consume either: the broker refused it
	// (access refused, the queue is held by an exclusive consumer) or has
	// no room for another consumer. Worker.Run returns
	// it, naming the queue, instead of subscribing again.
	ErrCannotConsume = errors.New("queuey: queue cannot be consumed")
	// ErrTooLarge is returned, before anything is sent, for a job larger
	// than a backend carries: over MaxJobSize on every backend, and on
	// RabbitMQ over the broker's max message size or with headers that do
	// not fit in one frame. Only that job fails; the enqueues beside it
	// are not touched.
	ErrTooLarge = errors.New("queuey: job too large")
	// ErrShutdownTimeout is the cancel cause of handler contexts still
	// running when the worker's shutdown timeout passes, and is wrapped by
	// Worker.Run's error then.
	ErrShutdownTimeout = errors.New("queuey: shutdown timeout passed")
)

// ErrQueueMismatch is returned by Declare when the queue exists with other
// arguments than the config asks for, and by an enqueue whose config
// differs from the one its producer declared under that name in what the
// enqueue depends on (priority range, attempts, queue type, delay mode).
var ErrQueueMismatch = errors.New("queuey: queue exists with other arguments")

// BatchError reports the jobs of one EnqueueMany call that were not
// enqueued. The others were.
type BatchError struct {
	// Errs holds one entry per job, in the order given: nil where the job
	// was enqueued.
	Errs []error
}

func (e *BatchError) Error() string {
	var first error
	n := 0
	for _, err := range e.Errs {
		if err != nil {
			if first == nil {
				first = err
			}
			n++
		}
	}
	return fmt.Sprintf("queuey: %d of %d jobs not enqueued; first: %v", n, len(e.Errs), first)
}

// Unwrap returns the errors of the jobs that were not enqueued.
func (e *BatchError) Unwrap() []error {
	var errs []error
	for _, err := range e.Errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
