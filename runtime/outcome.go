package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
	"github.com/queuey/queuey/internal/rules/errs"
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
// type. The job is dead-lettered at once, with the error as its reason:
// retrying cannot help. The handler does not run.
//
// When one value of the payload is to blame (a string where the job has
// an int64, a number out of its field's range, a map where it has a
// slice), Field, Key, Want and Found say which and why:
//
//	decode orders.Order payload: field "Items[2].Qty" (msgpack key "items[2].qty"): want int64, found string "abc" (job "42" on queue "orders")
//
// Values are quoted clipped to 64 bytes. A payload that is not one msgpack
// value (malformed, bytes after it, none) blames none: then Want is "" and
// Err says what is wrong.
type DecodeError struct {
	Queue string // the queue the job came from
	ID    string // the job's ID
	Kind  string // the job's type
	// Field is the path of the value to blame by Go field names from the
	// job's type (Items[2].Qty, Counts["a"], ByLevel[key] for a map's
	// key), "" for the payload as a whole.
	Field string
	// Key is Field as the payload names it: by msgpack keys
	// (items[2].qty), or by position ([3]) in a struct sent as an array.
	Key string
	// Want is the Go type the value lands in: int64, a named type with
	// its kind (orders.Level (int8)), a struct as "orders.Item (a map of
	// its fields)".
	Want string
	// Found is what the payload holds there: `string "abc"`, "int 300,
	// out of its range", "array of 3", "nil".
	Found string
	// Err is the decoder's error, which Error quotes.
	Err error
}

// Error says what is wrong first, and then which job: a dead letter's
// reason is shown clipped where the job's ID and queue have columns of
// their own (queuey dead ls).
func (e *DecodeError) Error() string {
	msg := fmt.Sprintf("decode %s payload: %v", e.Kind, e.Err)
	if e.ID != "" || e.Queue != "" {
		msg += fmt.Sprintf(" (job %q on queue %q)", errs.Clip(e.ID), e.Queue)
	}
	return msg
}

func (e *DecodeError) Unwrap() error { return e.Err }

// decodeError is the DecodeError of env, whose payload failed to decode
// into the type fit checks with err: it locates the value to blame,
// reading the payload again, when err does not.
func decodeError(q *QueueConfig, env *Envelope, fit *mpfit.Checker, err error) *DecodeError {
	de := &DecodeError{Queue: q.Name, ID: env.ID, Kind: q.Kind, Err: err}
	me, ok := err.(*mpfit.Error)
	if !ok {
		if me = fit.Locate(env.Payload); me == nil {
			return de
		}
		de.Err = me
	}
	de.Field, de.Key, de.Want, de.Found = me.Path, me.Key, mpfit.TypeString(me.Type), me.Found
	if me.Why != "" {
		de.Found += ", " + me.Why
	}
	return de
}
