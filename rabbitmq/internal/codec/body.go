package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/queuey/queuey/internal/msgpack/mpscan"
	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/runtime"
)

// The body of an envelope of ContentType is a msgpack array holding the
// envelope's fields that have no AMQP property, followed by the job's
// payload as it is (itself msgpack):
//
//	[attempt, max attempts, priority, enqueued at (Unix ns, 0 for none),
//	 queue, last error ("" for none), headers (map of strings sorted by
//	 name, or nil)]
//	payload...
//
// Decoders read the fields they know and skip any further array elements,
// so a later format can append fields and still be read by this one.
//
// Carrying these fields in the body instead of an AMQP header table keeps
// the content header down to the properties operators read on the broker
// (message id, type, timestamp, content type): a header table costs the
// broker a decode on every publish and about as much memory again as the
// body for every waiting message.
const bodyFields = 7

// appendBody appends the fields of env and then its payload to b.
func appendBody(b []byte, env *runtime.Envelope) []byte {
	b = append(b, 0x90|bodyFields)
	b = appendUint(b, uint64(env.Attempt))
	b = appendUint(b, uint64(env.MaxAttempts))
	b = appendUint(b, uint64(env.Priority))
	b = appendInt(b, unixNano(env.EnqueuedAt))
	b = appendString(b, env.Queue)
	b = appendString(b, env.LastError)
	b = appendHeaders(b, env.Headers)
	return append(b, env.Payload...)
}

// appendHeaders appends h, nil as nil, with its entries sorted by name, so
// that one envelope always has one body (docs/wire-format.md, and the test
// vectors other languages check their bodies against).
func appendHeaders(b []byte, h map[string]string) []byte {
	if h == nil {
		return append(b, 0xc0)
	}
	b = appendMapLen(b, len(h))
	var room [8]string
	names := room[:0]
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b = appendString(b, k)
		b = appendString(b, h[k])
	}
	return b
}

// bodySize is an upper bound of the length appendBody gives.
func bodySize(env *runtime.Envelope) int {
	n := 1 + 3*9 + 9 + 5 + len(env.Queue) + 5 + len(env.LastError) + 5 + len(env.Payload)
	for k, v := range env.Headers {
		n += 10 + len(k) + len(v)
	}
	return n
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= 0x7f:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func appendInt(b []byte, n int64) []byte {
	if n >= 0 {
		return appendUint(b, uint64(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n <= 31:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendMapLen(b []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xde), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

// decodeBody fills env's fields from body and points env.Payload at the
// rest of body (no copy). Every length the body claims is checked against
// what it holds before anything is allocated, and fields skipped are
// skipped without recursion: no body, however crafted, costs more than
// its size.
func decodeBody(body []byte, env *runtime.Envelope) error {
	r := mpscan.NewReader(body)
	n, err := r.ArrayLen()
	if err != nil || n < bodyFields {
		if err == nil {
			err = fmt.Errorf("%d fields, want at least %d", n, bodyFields)
		}
		return fmt.Errorf("%w: body does not start with the envelope's fields: %v", ErrInvalid, err)
	}
	field := func(name string, lo, hi int64) (int64, error) {
		v, err := r.Int()
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
		}
		if v < lo || v > hi {
			return 0, fmt.Errorf("%w: %s = %d, want %d..%d", ErrInvalid, name, v, lo, hi)
		}
		return v, nil
	}
	attempt, err := field("attempt", 1, math.MaxInt32)
	if err != nil {
		return err
	}
	maxAttempts, err := field("max attempts", 1, math.MaxInt32)
	if err != nil {
		return err
	}
	priority, err := field("priority", 0, math.MaxUint8)
	if err != nil {
		return err
	}
	enqueuedAt, err := field("enqueued at", math.MinInt64, math.MaxInt64)
	if err != nil {
		return err
	}
	queue, err := readString(r, false)
	if err != nil {
		return fmt.Errorf("%w: queue: %v", ErrInvalid, err)
	}
	if queue == "" {
		return fmt.Errorf("%w: queue is empty", ErrInvalid)
	}
	lastError, err := readString(r, true)
	if err != nil {
		return fmt.Errorf("%w: last error: %v", ErrInvalid, err)
	}
	headers, err := decodeHeaders(r)
	if err != nil {
		return err
	}
	for i := bodyFields; i < n; i++ {
		if err := r.Skip(); err != nil {
			return fmt.Errorf("%w: field %d: %v", ErrInvalid, i+1, err)
		}
	}
	env.Attempt = int(attempt)
	env.MaxAttempts = int(maxAttempts)
	env.Priority = uint8(priority)
	env.EnqueuedAt = fromUnixNano(enqueuedAt)
	env.Queue = queue
	env.LastError = lastError
	env.Headers = headers
	env.Payload = r.Rest()
	return nil
}

// maxHeadersHint is the most header entries room is made for before they
// are read: a body may claim more than it holds.
const maxHeadersHint = 16

func decodeHeaders(r *mpscan.Reader) (map[string]string, error) {
	n, isNil, err := r.MapLen()
	if err != nil {
		return nil, fmt.Errorf("%w: headers: %v", ErrInvalid, err)
	}
	if isNil {
		return nil, nil
	}
	h := make(map[string]string, min(n, maxHeadersHint))
	for range n {
		k, err := readString(r, false)
		if err != nil {
			return nil, fmt.Errorf("%w: header name: %v", ErrInvalid, err)
		}
		v, err := readString(r, false)
		if err != nil {
			return nil, fmt.Errorf("%w: header %q: %v", ErrInvalid, errs.Clip(k), err)
		}
		if _, dup := h[k]; dup {
			return nil, fmt.Errorf("%w: header %q appears twice: a name appears at most once", ErrInvalid, errs.Clip(k))
		}
		h[k] = v
	}
	return h, nil
}

// Why a string field is refused; static, so that reading a good one
// allocates nothing but the string.
var (
	errNilString = errors.New("nil, want a string")
	errNotUTF8   = errors.New("not UTF-8")
)

// readString reads a str holding UTF-8, or a nil (as "") when nilOK. Its
// error says what is wrong, for the caller to name the field.
func readString(r *mpscan.Reader, nilOK bool) (string, error) {
	if c, err := r.Peek(); err == nil && c == 0xc0 && !nilOK {
		return "", errNilString
	}
	s, err := r.String()
	if err != nil {
		return "", err
	}
	if !utf8.ValidString(s) {
		return "", errNotUTF8
	}
	return s, nil
}
