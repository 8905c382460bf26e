// Package codec maps runtime envelopes to AMQP messages and back. It is pure:
// no I/O, no broker.
//
// The payload is the message body. The envelope's ID, kind and enqueue time
// travel in the message id, type and timestamp properties; everything else in
// headers named by the Header constants. User headers travel under
// UserHeaderPrefix.
package codec

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// ContentType is the content type of every envelope's body.
const ContentType = "application/msgpack"

// Header names.
const (
	HeaderAttempt     = "x-queuey-attempt"      // int: 1-based run number
	HeaderMaxAttempts = "x-queuey-max-attempts" // int: runs before dead-lettering
	HeaderPriority    = "x-queuey-priority"     // int 0..255: the job's own priority
	HeaderEnqueuedAt  = "x-queuey-enqueued-at"  // int: Unix nanoseconds of the first enqueue
	HeaderQueue       = "x-queuey-queue"        // string: the logical queue
	HeaderLastError   = "x-queuey-last-error"   // string, optional: error of the previous run
	HeaderDeadReason  = "x-queuey-dead-reason"  // string, optional: why the message is dead
	// UserHeaderPrefix prefixes each of the envelope's own headers.
	UserHeaderPrefix = "x-queuey-h-"
)

// ErrInvalid is wrapped by every Decode error: the message is not a valid
// envelope.
var ErrInvalid = errors.New("invalid envelope")

// MaxShortString is the longest AMQP short string, in bytes: the limit of
// a message id, a type, a header name, an exchange name and a routing key.
const MaxShortString = 255

// ErrTooLong is wrapped by every error about a field longer than an AMQP
// short string can carry. Such a publish must never reach the client
// library: it writes the method frame before it fails on the header frame,
// and the broker then closes the whole connection (501 FRAME_ERROR), with
// every publish in flight on it.
var ErrTooLong = errors.New("field longer than an AMQP short string (255 bytes)")

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) <= 40 {
		return s
	}
	return s[:40] + "…"
}

func tooLong(field string, n int) error {
	return fmt.Errorf("%w: %s is %d bytes, want at most %d", ErrTooLong, field, n, MaxShortString)
}

// CheckPublishing refuses a publish of msg to exchange with routing key
// key when any field that travels as an AMQP short string (the exchange,
// the routing key, the string properties and every header name, nested
// tables included) exceeds MaxShortString bytes. The error names the field
// and its length.
func CheckPublishing(exchange, key string, msg *amqp.Publishing) error {
	for _, f := range []struct {
		name, v string
	}{
		{"exchange name", exchange},
		{"routing key (queue name)", key},
		{"message id", msg.MessageId},
		{"type (job kind)", msg.Type},
		{"content type", msg.ContentType},
		{"content encoding", msg.ContentEncoding},
		{"correlation id", msg.CorrelationId},
		{"reply-to", msg.ReplyTo},
		{"expiration", msg.Expiration},
		{"user id", msg.UserId},
		{"app id", msg.AppId},
	} {
		if len(f.v) > MaxShortString {
			return tooLong(f.name, len(f.v))
		}
	}
	return checkTable(msg.Headers, "header")
}

func checkTable(t amqp.Table, what string) error {
	for k, v := range t {
		if len(k) > MaxShortString {
			return tooLong(fmt.Sprintf("%s name %q", what, clip(k)), len(k))
		}
		switch x := v.(type) {
		case amqp.Table:
			if err := checkTable(x, fmt.Sprintf("name in header %q", k)); err != nil {
				return err
			}
		case []any:
			for _, e := range x {
				if t, ok := e.(amqp.Table); ok {
					if err := checkTable(t, fmt.Sprintf("name in header %q", k)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Options are the wire facts of one publish that are not in the envelope.
type Options struct {
	// Priority is the AMQP priority the message travels at. It differs from
	// the envelope's own priority for a deferral, which travels at its
	// queue's maximum priority.
	Priority uint8
	// DeadReason, when set, is carried in HeaderDeadReason.
	DeadReason string
}

// Encode returns the publishing that carries env. It refuses an envelope
// that Decode would refuse, and one with a field longer than an AMQP short
// string can carry (ErrTooLong): the ID, the kind, the queue name or a
// header name.
func Encode(env *runtime.Envelope, o Options) (amqp.Publishing, error) {
	switch {
	case env == nil:
		return amqp.Publishing{}, fmt.Errorf("encode: nil envelope")
	case len(env.ID) > MaxShortString:
		return amqp.Publishing{}, fmt.Errorf("encode job %q on queue %q: %w", clip(env.ID), env.Queue, tooLong("ID (message id)", len(env.ID)))
	case env.ID == "":
		return amqp.Publishing{}, fmt.Errorf("encode job on queue %q: empty ID", env.Queue)
	case env.Queue == "":
		return amqp.Publishing{}, fmt.Errorf("encode job %q: empty queue", env.ID)
	case len(env.Queue) > MaxShortString:
		return amqp.Publishing{}, fmt.Errorf("encode job %q: %w", env.ID, tooLong("queue name", len(env.Queue)))
	case len(env.Kind) > MaxShortString:
		return amqp.Publishing{}, fmt.Errorf("encode job %q on queue %q: %w", env.ID, env.Queue, tooLong("kind (type)", len(env.Kind)))
	case env.Attempt < 1 || env.MaxAttempts < 1:
		return amqp.Publishing{}, fmt.Errorf("encode job %q on queue %q: attempt %d of %d, want both 1 or more", env.ID, env.Queue, env.Attempt, env.MaxAttempts)
	}
	for k := range env.Headers {
		if n := len(UserHeaderPrefix) + len(k); n > MaxShortString {
			return amqp.Publishing{}, fmt.Errorf("encode job %q on queue %q: %w", env.ID, env.Queue,
				tooLong(fmt.Sprintf("header name %q with its prefix %q", clip(k), UserHeaderPrefix), n))
		}
	}
	h := make(amqp.Table, 6+len(env.Headers))
	h[HeaderAttempt] = int64(env.Attempt)
	h[HeaderMaxAttempts] = int64(env.MaxAttempts)
	h[HeaderPriority] = int64(env.Priority)
	h[HeaderEnqueuedAt] = unixNano(env.EnqueuedAt)
	h[HeaderQueue] = env.Queue
	if env.LastError != "" {
		h[HeaderLastError] = env.LastError
	}
	if o.DeadReason != "" {
		h[HeaderDeadReason] = o.DeadReason
	}
	for k, v := range env.Headers {
		h[UserHeaderPrefix+k] = v
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  ContentType,
		DeliveryMode: amqp.Persistent,
		Priority:     o.Priority,
		MessageId:    env.ID,
		Type:         env.Kind,
		Timestamp:    env.EnqueuedAt,
		Body:         env.Payload,
	}, nil
}

// Decode returns the envelope d carries, or an error wrapping ErrInvalid that
// says what is wrong: a wrong content type, an empty message id, a missing
// or ill-typed header. It never panics, whatever d holds.
func Decode(d *amqp.Delivery) (*runtime.Envelope, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil delivery", ErrInvalid)
	}
	if d.ContentType != ContentType {
		return nil, fmt.Errorf("%w: content type %q, want %q", ErrInvalid, d.ContentType, ContentType)
	}
	if d.MessageId == "" {
		return nil, fmt.Errorf("%w: empty message id", ErrInvalid)
	}
	h := d.Headers
	attempt, err := intHeader(h, HeaderAttempt, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	maxAttempts, err := intHeader(h, HeaderMaxAttempts, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	priority, err := intHeader(h, HeaderPriority, 0, math.MaxUint8)
	if err != nil {
		return nil, err
	}
	enqueuedAt, err := intHeader(h, HeaderEnqueuedAt, math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	queue, err := stringHeader(h, HeaderQueue, true)
	if err != nil {
		return nil, err
	}
	lastError, err := stringHeader(h, HeaderLastError, false)
	if err != nil {
		return nil, err
	}
	env := &runtime.Envelope{
		ID:          d.MessageId,
		Queue:       queue,
		Kind:        d.Type,
		Payload:     d.Body,
		Attempt:     int(attempt),
		MaxAttempts: int(maxAttempts),
		Priority:    uint8(priority),
		EnqueuedAt:  fromUnixNano(enqueuedAt),
		LastError:   lastError,
	}
	for k, v := range h {
		name, ok := strings.CutPrefix(k, UserHeaderPrefix)
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: header %q is %T, want string", ErrInvalid, k, v)
		}
		if env.Headers == nil {
			env.Headers = make(map[string]string)
		}
		env.Headers[name] = s
	}
	return env, nil
}

// unixNano is t in Unix nanoseconds, 0 for the zero time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// DeadReason returns the dead reason carried in headers, or "".
func DeadReason(h amqp.Table) string {
	s, _ := h[HeaderDeadReason].(string)
	return s
}

func intHeader(h amqp.Table, name string, lo, hi int64) (int64, error) {
	v, ok := h[name]
	if !ok {
		return 0, fmt.Errorf("%w: missing header %q", ErrInvalid, name)
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int16:
		n = int64(x)
	case int8:
		n = int64(x)
	case int:
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	default:
		return 0, fmt.Errorf("%w: header %q is %T, want an integer", ErrInvalid, name, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%w: header %q = %d, want %d..%d", ErrInvalid, name, n, lo, hi)
	}
	return n, nil
}

func stringHeader(h amqp.Table, name string, required bool) (string, error) {
	v, ok := h[name]
	if !ok {
		if required {
			return "", fmt.Errorf("%w: missing header %q", ErrInvalid, name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: header %q is %T, want string", ErrInvalid, name, v)
	}
	if required && s == "" {
		return "", fmt.Errorf("%w: header %q is empty", ErrInvalid, name)
	}
	return s, nil
}
