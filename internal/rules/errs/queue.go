// Package errs holds what every backend says alike, so that it reads the
// same whichever backend runs: the errors about a queue (one that does not
// exist, one name declared for two job kinds) and the reasons of the dead
// letters a backend makes itself. Package runtime exports the sentinels,
// ErrUnknownQueue and ErrKindConflict; runtime's memory backend and the
// RabbitMQ backend make the errors with Unknown and KindConflict.
package errs

import (
	"errors"
	"fmt"
	"unicode/utf8"
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

// clipLen is how many bytes of a name or an ID an error message quotes.
const clipLen = 64

// Clip shortens s, a name, an ID or a value out of a message, to quote it
// in an error: at most its first 64 bytes, cut between two characters,
// and "…" after them where it was cut.
func Clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	n := clipLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
