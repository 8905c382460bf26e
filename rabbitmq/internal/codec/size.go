package codec

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/runtime"
)

// Limits are what the broker takes in one publish on a connection. The
// broker refuses more by closing the connection (a content header over
// frame_max: 501 FRAME_ERROR) or the channel (a body over
// max_message_size: 406 PRECONDITION_FAILED), failing every other publish
// in flight on it; CheckPublishing refuses it in the client instead.
type Limits struct {
	// FrameMax is the connection's negotiated frame_max. The content
	// header, the properties with the header table, travels in one frame
	// of at most this many bytes, its framing included (FrameOverhead).
	// Zero means no limit, as frame_max 0 does.
	FrameMax int
	// MaxBody is the broker's max_message_size: the longest body it takes.
	// Zero means no limit.
	MaxBody int
	// Reserve is room kept in the content header for headers added after
	// the check: CheckPublishing and Fit refuse or shrink what would not
	// fit with Reserve more bytes.
	Reserve int
}

// FrameOverhead is what a frame adds to its payload: type, channel and
// payload size before it (7 bytes), the frame-end octet after it. A frame
// of frame_max bytes carries frame_max-FrameOverhead bytes of payload.
const FrameOverhead = 8

// HeaderRoom is the most bytes of content header, as HeaderSize counts
// them, that fit in one frame with Reserve to spare, or math.MaxInt with no
// frame limit.
func (l Limits) HeaderRoom() int {
	if l.FrameMax <= 0 {
		return math.MaxInt
	}
	return l.FrameMax - FrameOverhead - l.Reserve
}

// FitsHeader reports whether msg's content header fits in HeaderRoom.
func (l Limits) FitsHeader(msg *amqp.Publishing) bool {
	return HeaderSize(msg) <= l.HeaderRoom()
}

// contentHeaderFixed is the part of a content header before the
// properties: class id (2), weight (2), body size (8) and the property
// flags (2; the 14 basic properties need no continuation).
const contentHeaderFixed = 14

// HeaderSize is the payload size, in bytes, of the content header frame
// that carries msg, exactly as amqp091-go writes it: the fixed part, then
// each property that is set (a string property that is not empty, a header
// table that is not empty, a delivery mode or priority above zero, a
// timestamp that is not zero). A header value of a type the client library
// cannot encode counts nothing; amqp.Table.Validate refuses it.
func HeaderSize(msg *amqp.Publishing) int {
	n := contentHeaderFixed +
		shortSize(msg.ContentType) + shortSize(msg.ContentEncoding) +
		shortSize(msg.CorrelationId) + shortSize(msg.ReplyTo) +
		shortSize(msg.Expiration) + shortSize(msg.MessageId) +
		shortSize(msg.Type) + shortSize(msg.UserId) + shortSize(msg.AppId)
	if len(msg.Headers) > 0 {
		n += TableSize(msg.Headers)
	}
	if msg.DeliveryMode > 0 {
		n++
	}
	if msg.Priority > 0 {
		n++
	}
	if !msg.Timestamp.IsZero() {
		n += 8
	}
	return n
}

// shortSize is the wire size of an optional short-string property.
func shortSize(s string) int {
	if s == "" {
		return 0
	}
	return 1 + len(s)
}

// TableSize is the wire size of field table t: its 4-byte length and every
// entry (EntrySize).
func TableSize(t amqp.Table) int {
	n := 4
	for k, v := range t {
		n += EntrySize(k, v)
	}
	return n
}

// EntrySize is the wire size of the field table entry k: v, the name as a
// short string and the value with its type octet.
func EntrySize(k string, v any) int { return 1 + len(k) + fieldSize(v) }

// fieldSize is the wire size of a field value, type octet included, as
// amqp091-go's writeField encodes it.
func fieldSize(v any) int {
	switch x := v.(type) {
	case nil:
		return 1
	case bool, byte, int8:
		return 2
	case int16, uint16:
		return 3
	case int, int32, uint32, float32:
		return 5
	case amqp.Decimal:
		return 6
	case int64, float64, time.Time:
		return 9
	case string:
		return 5 + len(x)
	case []byte:
		return 5 + len(x)
	case []any:
		n := 5
		for _, e := range x {
			n += fieldSize(e)
		}
		return n
	case amqp.Table:
		return 1 + TableSize(x)
	}
	return 0
}

// largestHeader returns the name and wire size of t's largest entry.
func largestHeader(t amqp.Table) (string, int) {
	name, most := "", 0
	for k, v := range t {
		if n := EntrySize(k, v); n > most {
			name, most = k, n
		}
	}
	return name, most
}

// checkSize refuses msg, with an error wrapping runtime.ErrTooLarge that
// names the limit, the size and the message id, when its content header
// does not fit in one frame or its body is over the broker's max message
// size.
func checkSize(msg *amqp.Publishing, lim Limits) error {
	if room := lim.HeaderRoom(); room != math.MaxInt {
		if n := HeaderSize(msg); n > room {
			less := fmt.Sprintf("%d of framing", FrameOverhead)
			if lim.Reserve > 0 {
				less += fmt.Sprintf(" and %d kept for headers the publish adds", lim.Reserve)
			}
			largest := ""
			if name, size := largestHeader(msg.Headers); size > 0 {
				largest = fmt.Sprintf("; its largest header, %q, takes %d bytes", errs.Clip(name), size)
			}
			return fmt.Errorf("%w: %s: its content header (properties and headers) is %d bytes, over the %d that one frame carries on this connection (frame_max %d, less %s)%s",
				runtime.ErrTooLarge, message(msg), n, room, lim.FrameMax, less, largest)
		}
	}
	if !lim.bodyOver(len(msg.Body)) {
		return nil
	}
	return lim.checkBody(message(msg), "body", len(msg.Body))
}

// CheckPayload refuses env, before it is encoded, when its payload alone
// is longer than lim.MaxBody: its body, whichever the format, would be
// too. It spares encoding, and holding twice in memory, a job that
// CheckPublishing would refuse.
func CheckPayload(env *runtime.Envelope, lim Limits) error {
	if !lim.bodyOver(len(env.Payload)) {
		return nil
	}
	return lim.checkBody(fmt.Sprintf("job %q", errs.Clip(env.ID)), "payload", len(env.Payload))
}

// bodyOver reports whether a body, or a part of one, of n bytes is over
// the broker's max message size. Callers ask it before naming the message
// for checkBody's error, which costs more than the check.
func (l Limits) bodyOver(n int) bool { return l.MaxBody > 0 && n > l.MaxBody }

// checkBody refuses n bytes of what (the body, or a part of it) of message
// which when they are more than the broker's max message size.
func (l Limits) checkBody(which, what string, n int) error {
	if l.bodyOver(n) {
		return fmt.Errorf("%w: %s: its %s is %d bytes, over the broker's max message size of %d (rabbitmq.Options.MaxMessageSize, which must match the broker's max_message_size)",
			runtime.ErrTooLarge, which, what, n, l.MaxBody)
	}
	return nil
}

// fitDeadHeaders makes the dead-letter headers of msg, an envelope of
// ContentType, fit lim: without the last error header first, which the
// body carries whole, then with the reason shortened (Shorten).
func fitDeadHeaders(msg *amqp.Publishing, lim Limits) {
	if lim.FitsHeader(msg) {
		return
	}
	delete(msg.Headers, HeaderLastError)
	over := HeaderSize(msg) - lim.HeaderRoom()
	if over <= 0 {
		return
	}
	if reason, ok := msg.Headers[HeaderDeadReason].(string); ok {
		msg.Headers[HeaderDeadReason] = Shorten(reason, len(reason)-over)
	}
}

// Shorten returns s when it is at most n bytes long, or else its start,
// cut at a rune boundary, and a note of how long s was, n bytes at most
// together (or the note alone, when n leaves no room for it).
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf("… (cut from %d bytes to fit one frame)", len(s))
	keep := max(n-len(note), 0)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + note
}

// message names msg in an error: by its id, when it has one.
func message(msg *amqp.Publishing) string {
	if msg.MessageId == "" {
		return "message without an id"
	}
	return fmt.Sprintf("message %q", errs.Clip(msg.MessageId))
}
