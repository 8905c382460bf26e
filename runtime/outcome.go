package runtime

import (
	"errors"
	"fmt"
	"time"
)

// DeferError is the error Defer returns: the handler asks for its job to be
// held for Delay and then run again ahead of the backlog, without burning an
// attempt.
type DeferError struct {
	Delay time.Duration
}

func (e *DeferError) Error() string { return fmt.Sprintf("queuey: job deferred for %v", e.Delay) }

// Defer returns an error that, returned by a handler, holds the job for d and
// then returns it ahead of the queue's backlog. No attempt is burned: this is
// the shape of a 429 with Retry-After. A d above MaxDeferral counts as a
// failed run.
func Defer(d time.Duration) error { return &DeferError{Delay: d} }

// PermanentError wraps an error that retrying cannot fix.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "queuey: permanent failure"
	}
	return "permanent: " + e.Err.Error()
}

func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent returns an error that, returned by a handler, dead-letters the
// job at once with err as its reason.
func Permanent(err error) error { return &PermanentError{Err: err} }

// IsPermanent reports whether err is or wraps a Permanent error.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// KindError is the error of a job whose envelope names another kind than
// the one its queue's handler takes: another job type was enqueued onto
// this queue name. The job is dead-lettered at once, and the handler, which
// would get a zero or half-filled struct, does not run.
type KindError struct {
	Queue string // the queue the job came from
	Got   string // the envelope's kind
	Want  string // the handler's kind
}

func (e *KindError) Error() string {
	return fmt.Sprintf("job of kind %q on queue %q, whose handler takes %q: dead-lettered without running the handler (is another job type enqueued onto this queue name?)", e.Got, e.Queue, e.Want)
}

// DecodeError is the error of a payload that does not decode into the job's
// type. The job is dead-lettered at once: retrying cannot help.
type DecodeError struct {
	Kind string
	Err  error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %s payload: %v", e.Kind, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
