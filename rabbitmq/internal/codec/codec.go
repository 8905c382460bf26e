// Package codec maps runtime envelopes to AMQP messages and back. It is pure:
// no I/O, no broker.
//
// The envelope's ID and kind travel in the message id and type properties,
// its enqueue time (to the second) in the timestamp; the rest of it, the
// payload included, in the body (see ContentType). A dead letter also
// carries what operators read on the broker in headers named by the Header
// constants.
//
// This is the reference implementation of format 1 of docs/wire-format.md,
// which producers in other languages write. TestVectors writes its test
// vectors, testdata/wire, with -update, and checks them on every run.
package codec

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/runtime"
)

// ContentType is the content type of every envelope this package encodes:
// the body holds the envelope's fields, then the msgpack payload.
const ContentType = "application/vnd.queuey.envelope+msgpack"

// Header names. A dead letter carries the dead reason, the time it died,
// the queue, the attempts and the last error in them, for operators
// reading it on the broker; other messages carry none.
const (
	HeaderAttempt     = "x-queuey-attempt"          // int: 1-based run number
	HeaderMaxAttempts = "x-queuey-max-attempts"     // int: runs before dead-lettering
	HeaderQueue       = "x-queuey-queue"            // string: the logical queue
	HeaderLastError   = "x-queuey-last-error"       // string, optional: error of the previous run
	HeaderDeadReason  = "x-queuey-dead-reason"      // string, optional: why the message is dead
	HeaderDeadAt      = "x-queuey-dead-lettered-at" // string, optional: when, RFC 3339 in UTC (DeadAtFormat)
)

// DeadAtFormat is the layout of HeaderDeadAt: RFC 3339 in UTC, with as
// many digits of the second's fraction as it has, up to nanoseconds
// ("2026-03-04T05:06:07.123456789Z").
const DeadAtFormat = time.RFC3339Nano

// ErrInvalid is wrapped by every Decode error: the message is not a valid
// envelope.
var ErrInvalid = errors.New("invalid envelope")

// MaxShortString is the longest AMQP short string, in bytes: the limit of
// a message id, a type, a header name, an exchange name and a routing key.
const MaxShortString = names.MaxShortString

// ErrTooLong is wrapped by every error about a field longer than an AMQP
// short string can carry. Such a publish must never reach the client
// library: it writes the method frame before it fails on the header frame,
// and the broker then closes the whole connection (501 FRAME_ERROR), with
// every publish in flight on it.
var ErrTooLong = errors.New("field longer than an AMQP short string (255 bytes)")

// Clip shortens a name or a field for an error message: its first 64
func tooLong(field string, n int) error {
	return fmt.Errorf("%w: %s is %d bytes, want at most %d", ErrTooLong, field, n, MaxShortString)
}

// CheckPublishing refuses a publish of msg to exchange with routing key
// key that the client library or the broker would fail after part of it
// was written, failing every other publish on the channel or the
// connection with it:
//
//   - a field that travels as an AMQP short string (the exchange, the
//     routing key, the string properties and every header name, nested
//     tables included) longer than MaxShortString bytes: ErrTooLong,
//     naming the field and its length;
//   - a header value of a type the client library cannot encode;
//   - a content header (HeaderSize) that does not fit in one frame of
//     lim.FrameMax with lim.Reserve to spare, or a body longer than
//     lim.MaxBody: runtime.ErrTooLarge, naming the limit, the size and the
//     message id.
func CheckPublishing(exchange, key string, msg *amqp.Publishing, lim Limits) error {
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
	if err := checkTable(msg.Headers, ""); err != nil {
		return err
	}
	if err := msg.Headers.Validate(); err != nil {
		return err
	}
	return checkSize(msg, lim)
}

// checkTable refuses a name in t longer than a short string: t is the
// message's headers when in is "", else a table within header in.
func checkTable(t amqp.Table, in string) error {
	for k, v := range t {
		if len(k) > MaxShortString {
			what := "header"
			if in != "" {
				what = fmt.Sprintf("name in header %q", in)
			}
			return tooLong(fmt.Sprintf("%s name %q", what, errs.Clip(k)), len(k))
		}
		switch x := v.(type) {
		case amqp.Table:
			if err := checkTable(x, k); err != nil {
				return err
			}
		case []any:
			for _, e := range x {
				if t, ok := e.(amqp.Table); ok {
					if err := checkTable(t, k); err != nil {
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
	// DeadAt, when set with DeadReason, is carried in HeaderDeadAt: when
	// the job was dead-lettered.
	DeadAt time.Time
	// Fit, when its FrameMax is set, is what the content header of a copy
	// of a job already on the broker (a retry, a deferral, a dead letter,
	// a redelivery, a re-drive) must fit in: such a copy must travel, or
	// the job stays where it is and fails the same way again. A dead
	// letter that would not fit goes without its last error header (the body keeps the last error
	// whole), then with its reason header shortened. Zero, as for an
	// enqueue, changes nothing: the publish refuses what does not fit.
	Fit Limits
}

// Encode returns the publishing that carries env. It refuses an envelope
// that Decode would refuse, and one with a field longer than an AMQP short
// string can carry (ErrTooLong): the ID, the kind, the queue name.
func Encode(env *runtime.Envelope, o Options) (amqp.Publishing, error) {
	msg, _, err := EncodeAppend(nil, env, o)
	return msg, err
}

// BodySize is at least the length of the body Encode gives env, for
// sizing the buffer of EncodeAppend.
func BodySize(env *runtime.Envelope) int { return bodySize(env) }

// EncodeAppend is Encode with the body appended to dst's spare capacity
// when it has room for BodySize(env) bytes, so that the bodies of a batch
// can share one allocation; without room, the body gets a buffer of its
// own. It returns the buffer to append the next body to. The publishing's
// body has no spare capacity.
func EncodeAppend(dst []byte, env *runtime.Envelope, o Options) (amqp.Publishing, []byte, error) {
	switch {
	case env == nil:
		return amqp.Publishing{}, dst, fmt.Errorf("encode: nil envelope")
	case len(env.ID) > MaxShortString:
		return amqp.Publishing{}, dst, fmt.Errorf("encode job %q on queue %q: %w", errs.Clip(env.ID), env.Queue, tooLong("ID (message id)", len(env.ID)))
	case env.ID == "":
		return amqp.Publishing{}, dst, fmt.Errorf("encode job on queue %q: empty ID", env.Queue)
	case env.Queue == "":
		return amqp.Publishing{}, dst, fmt.Errorf("encode job %q: empty queue", env.ID)
	case len(env.Queue) > MaxShortString:
		return amqp.Publishing{}, dst, fmt.Errorf("encode job %q: %w", env.ID, tooLong("queue name", len(env.Queue)))
	case len(env.Kind) > MaxShortString:
		return amqp.Publishing{}, dst, fmt.Errorf("encode job %q on queue %q: %w", env.ID, env.Queue, tooLong("kind (type)", len(env.Kind)))
	case env.Attempt < 1 || env.MaxAttempts < 1:
		return amqp.Publishing{}, dst, fmt.Errorf("encode job %q on queue %q: attempt %d of %d, want both 1 or more", env.ID, env.Queue, env.Attempt, env.MaxAttempts)
	}
	var h amqp.Table
	if o.DeadReason != "" {
		h = amqp.Table{
			HeaderDeadReason:  o.DeadReason,
			HeaderQueue:       env.Queue,
			HeaderAttempt:     int64(env.Attempt),
			HeaderMaxAttempts: int64(env.MaxAttempts),
		}
		if env.LastError != "" {
			h[HeaderLastError] = env.LastError
		}
		if !o.DeadAt.IsZero() {
			h[HeaderDeadAt] = FormatDeadAt(o.DeadAt)
		}
	}
	if n := bodySize(env); cap(dst)-len(dst) < n {
		dst = make([]byte, 0, n) // the bodies before keep the old buffer
	}
	start := len(dst)
	dst = appendBody(dst, env)
	msg := amqp.Publishing{
		Headers:      h,
		ContentType:  ContentType,
		DeliveryMode: amqp.Persistent,
		Priority:     o.Priority,
		MessageId:    env.ID,
		Type:         env.Kind,
		Timestamp:    env.EnqueuedAt,
		Body:         dst[start:len(dst):len(dst)],
	}
	if h != nil && o.Fit.FrameMax > 0 {
		fitDeadHeaders(&msg, o.Fit)
	}
	return msg, dst, nil
}

// Decode returns the envelope d carries, or an error wrapping ErrInvalid that
// says what is wrong: a wrong content type, a message id that is empty or
// not UTF-8, an expiration, a body that does not hold the envelope's
// fields as docs/wire-format.md says (a string that is not UTF-8, a job
// header name twice included). The payload is checked against the job's
// type where it is decoded, by the worker. It never panics, whatever d holds. The
// envelope's payload shares d.Body's memory.
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
	if !utf8.ValidString(d.MessageId) {
		return nil, fmt.Errorf("%w: message id %q is not UTF-8", ErrInvalid, errs.Clip(d.MessageId))
	}
	if d.Expiration != "" {
		return nil, fmt.Errorf("%w: expiration %q set: a job must not expire (the broker would drop it, or dead-letter it with no reason)", ErrInvalid, errs.Clip(d.Expiration))
	}
	env := &runtime.Envelope{ID: d.MessageId, Kind: d.Type}
	if err := decodeBody(d.Body, env); err != nil {
		return nil, err
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

// BrokerDeath returns the reason and count of the broker's own
// dead-lettering of a message from queue, as its x-death header records
// it (reason "delivery_limit", "rejected", "expired" or "maxlen"); ok is
// false when the header names no death from queue.
func BrokerDeath(h amqp.Table, queue string) (reason string, count int64, ok bool) {
	deaths, _ := h["x-death"].([]any)
	for _, d := range deaths {
		e, isTable := d.(amqp.Table)
		if !isTable {
			continue
		}
		if q, _ := e["queue"].(string); q != queue {
			continue
		}
		reason, _ = e["reason"].(string)
		switch n := e["count"].(type) {
		case int64:
			count = n
		case int32:
			count = int64(n)
		}
		return reason, count, reason != ""
	}
	return "", 0, false
}

// FormatDeadAt is t as HeaderDeadAt carries it (DeadAtFormat).
func FormatDeadAt(t time.Time) string { return t.UTC().Format(DeadAtFormat) }

// DeadAt returns when the dead letter with headers h, of logical queue
// queue, was dead-lettered, in UTC: HeaderDeadAt when a worker moved it,
// or else the time of the broker's own dead-lettering of it from queue
// (its x-death entry, to the second). It is zero when neither says, or
// what they hold does not read as a time.
func DeadAt(h amqp.Table, queue string) time.Time {
	if s, ok := h[HeaderDeadAt].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
		return time.Time{}
	}
	deaths, _ := h["x-death"].([]any)
	for _, d := range deaths {
		e, ok := d.(amqp.Table)
		if !ok {
			continue
		}
		if q, _ := e["queue"].(string); q != queue {
			continue
		}
		if t, ok := e["time"].(time.Time); ok {
			return t.UTC()
		}
	}
	return time.Time{}
}
