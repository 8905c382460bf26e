package runtime

import "errors"

var (
	// ErrUnknownQueue is returned for a publish or a wait onto a queue that
	// was not declared through the backend in this process.
	ErrUnknownQueue = errors.New("queuey: unknown queue")
	// ErrDelayTooLong is returned for a wait longer than MaxDeferral after
	// rounding up to the backend's granularity. Waits are refused, never
	// clamped: releasing a job early is the one thing a wait must not do.
	ErrDelayTooLong = errors.New("queuey: delay too long")
	// ErrInvalidConfig is wrapped by every QueueConfig validation error.
	ErrInvalidConfig = errors.New("queuey: invalid queue config")
	// ErrInvalidOption is wrapped by errors about enqueue and worker options.
	ErrInvalidOption = errors.New("queuey: invalid option")
	// ErrWorkerRunning is returned by a second call of Worker.Run.
	ErrWorkerRunning = errors.New("queuey: worker already running")
	// ErrClosed is returned by a backend, subscription or delivery after
	// Close.
	ErrClosed = errors.New("queuey: closed")
	// ErrShutdownTimeout is the cancel cause of handler contexts still
	// running when the worker's shutdown timeout passes.
	ErrShutdownTimeout = errors.New("queuey: shutdown timeout passed")
)

// ErrQueueMismatch is returned by Declare when the queue exists with other
// arguments than the config asks for.
var ErrQueueMismatch = errors.New("queuey: queue exists with other arguments")
