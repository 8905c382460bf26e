package runtime

import "context"

// Pauser is for backend implementers: an optional capability beside
// Backend, of backends that can pause a queue for every worker of every
// process using the backend, and keep it paused across worker restarts
// until it is resumed. While a queue is paused, workers take none of its
// jobs (those they are running finish), enqueues go on and jobs
// accumulate. Workers watch it when their backend implements it; the
// operators' tools (package admin) pause and resume through it.
type Pauser interface {
	// PauseQueue pauses queue. Pausing a paused queue does nothing more. A
	// queue that does not exist is ErrUnknownQueue.
	PauseQueue(ctx context.Context, queue string) error
	// ResumeQueue resumes queue. Resuming a queue that is not paused does
	// nothing.
	ResumeQueue(ctx context.Context, queue string) error
	// Paused reports whether queue is paused.
	Paused(ctx context.Context, queue string) (bool, error)
	// WatchPaused sends whether queue is paused now, then each change,
	// until ctx ends; then it closes the channel. Only the latest state
	// waits in the channel: a reader that falls behind misses states in
	// between, never the last. Workers use it to stop and start consuming.
	WatchPaused(ctx context.Context, queue string) (<-chan bool, error)
}
