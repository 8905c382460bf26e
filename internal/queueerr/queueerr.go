// Package queueerr holds the errors every backend returns alike about a
// queue: one that does not exist, and one name declared for two job kinds.
// Package runtime exports the sentinels, ErrUnknownQueue and
// ErrKindConflict; runtime's memory backend and the RabbitMQ backend make
// the errors with Unknown and KindConflict, so that they read the same
// whichever backend runs.
package queueerr

import (
	"errors"
	"fmt"
)

var (
	// ErrUnknownQueue is runtime.ErrUnknownQueue.
	ErrUnknownQueue = errors.New("queuey: unknown queue")
	// ErrKindConflict is runtime.ErrKindConflict.
	ErrKindConflict = errors.New("queuey: two job kinds on one queue")
)

// Unknown returns ErrUnknownQueue for queue, saying why (such as "was not
// declared on this backend") and how to declare it.
func Unknown(queue, why string) error {
	return fmt.Errorf("%w: %q %s; declare it first: runtime.NewProducer(ctx, backend, queues...) declares the queues it is given (generated code lists a package's in Queues()), and Worker.Run declares the queues it handles", ErrUnknownQueue, queue, why)
}

// KindConflict returns ErrKindConflict when queue, declared for jobs of
// kind declared, is asked for jobs of kind, and nil when the two agree or
// either is empty. Backends check it on each Declare, so that one process
// cannot put two job types on one queue, where each handler would get the
// other's jobs.
func KindConflict(queue, declared, kind string) error {
	if declared == "" || kind == "" || declared == kind {
		return nil
	}
	return fmt.Errorf("%w: queue %q is declared for %s jobs and now for %s jobs; a queue carries one job type: give one of them another name= in its //queuey:queue line",
		ErrKindConflict, queue, declared, kind)
}
