// Package mpscan reads msgpack from a byte slice without trusting it: every
// length a value claims is checked against the bytes that remain before
// anything is allocated for it, and nesting is bounded, so that no input,
// however crafted, costs more than its own size or overflows a stack.
//
// It reads the few shapes queuey's envelope and package mpfit need
// (arrays, maps, numbers, strings) and skips any value; decoding a job's
// payload into its Go type stays with github.com/vmihailenco/msgpack/v5,
// once Check has passed (Unmarshal does both).
package mpscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/rules/errs"
)

// MaxDepth is the deepest nesting of arrays and maps accepted.
const MaxDepth = 256

// ErrMalformed is wrapped by every error of this package.
var ErrMalformed = errors.New("malformed msgpack")

// Reader reads values from the front of a byte slice.
type Reader struct {
	b   []byte
	off int
}

// NewReader returns a Reader of b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Rest returns the bytes not read yet (nil when none are left).
func (r *Reader) Rest() []byte {
	if r.off >= len(r.b) {
		return nil
	}
	return r.b[r.off:]
}

func (r *Reader) remaining() int { return len(r.b) - r.off }

func (r *Reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
}

// take returns the next n bytes.
func (r *Reader) take(n uint64) ([]byte, error) {
	if n > uint64(r.remaining()) {
		return nil, r.errorf("%d bytes claimed, %d left", n, r.remaining())
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

func (r *Reader) byte() (byte, error) {
	b, err := r.take(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// uint reads a big-endian unsigned integer of size bytes (1, 2, 4 or 8).
func (r *Reader) uint(size int) (uint64, error) {
	b, err := r.take(uint64(size))
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	}
	return binary.BigEndian.Uint64(b), nil
}

// ArrayLen reads an array's header and returns how many values follow.
func (r *Reader) ArrayLen() (int, error) {
	at := r.off
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	var n uint64
	switch {
	case c&0xf0 == 0x90:
		n = uint64(c & 0x0f)
	case c == 0xdc:
		n, err = r.uint(2)
	case c == 0xdd:
		n, err = r.uint(4)
	default:
		r.off = at
		return 0, r.errorf("type 0x%02x, want an array", c)
	}
	if err != nil {
		return 0, err
	}
	if n > uint64(r.remaining()) { // every value takes a byte at least
		return 0, r.errorf("array of %d values claimed, %d bytes left", n, r.remaining())
	}
	return int(n), nil
}

// MapLen reads a map's header and returns how many key-value pairs follow;
// nil is reported as isNil.
func (r *Reader) MapLen() (n int, isNil bool, err error) {
	at := r.off
	c, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	var m uint64
	switch {
	case c == 0xc0:
		return 0, true, nil
	case c&0xf0 == 0x80:
		m = uint64(c & 0x0f)
	case c == 0xde:
		m, err = r.uint(2)
	case c == 0xdf:
		m, err = r.uint(4)
	default:
		r.off = at
		return 0, false, r.errorf("type 0x%02x, want a map", c)
	}
	if err != nil {
		return 0, false, err
	}
	if m > uint64(r.remaining())/2 { // every pair takes two bytes at least
		return 0, false, r.errorf("map of %d entries claimed, %d bytes left", m, r.remaining())
	}
	return int(m), false, nil
}

// Int reads an integer of any msgpack width.
func (r *Reader) Int() (int64, error) {
	at := r.off
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0xcc && c <= 0xcf:
		u, err := r.uint(1 << (c - 0xcc))
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			return 0, r.errorf("%d does not fit an int64", u)
		}
		return int64(u), nil
	case c >= 0xd0 && c <= 0xd3:
		size := 1 << (c - 0xd0)
		u, err := r.uint(size)
		if err != nil {
			return 0, err
		}
		switch size {
		case 1:
			return int64(int8(u)), nil
		case 2:
			return int64(int16(u)), nil
		case 4:
			return int64(int32(u)), nil
		}
		return int64(u), nil
	}
	r.off = at
	return 0, r.errorf("type 0x%02x, want an integer", c)
}

// NumberKind is the kind of a Number.
type NumberKind int

const (
	// Int is an integer that fits an int64, whatever its encoding.
	Int NumberKind = iota + 1
	// BigUint is an unsigned integer above math.MaxInt64.
	BigUint
	// Float32 and Float64 are floats encoded in 32 and 64 bits.
	Float32
	Float64
)

// Number is an integer or a float as it was encoded.
type Number struct {
	Kind  NumberKind
	Int   int64   // for Int
	Uint  uint64  // for BigUint
	Float float64 // for Float32 and Float64
}

// Peek returns the type byte of the next value without reading it.
func (r *Reader) Peek() (byte, error) {
	if r.remaining() == 0 {
		return 0, r.errorf("no value left")
	}
	return r.b[r.off], nil
}

// Nil reads a nil if one is next, and reports whether it did.
func (r *Reader) Nil() bool {
	if r.remaining() > 0 && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// Number reads an integer or a float if one is next; ok is false, and
// nothing is read, if something else is.
func (r *Reader) Number() (n Number, ok bool, err error) {
	c, err := r.Peek()
	if err != nil {
		return Number{}, false, err
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || (c >= 0xd0 && c <= 0xd3) || (c >= 0xcc && c <= 0xce):
		i, err := r.Int()
		return Number{Kind: Int, Int: i}, err == nil, err
	case c == 0xcf:
		r.off++
		u, err := r.uint(8)
		if err != nil {
			return Number{}, false, err
		}
		if u > math.MaxInt64 {
			return Number{Kind: BigUint, Uint: u}, true, nil
		}
		return Number{Kind: Int, Int: int64(u)}, true, nil
	case c == 0xca:
		r.off++
		u, err := r.uint(4)
		return Number{Kind: Float32, Float: float64(math.Float32frombits(uint32(u)))}, err == nil, err
	case c == 0xcb:
		r.off++
		u, err := r.uint(8)
		return Number{Kind: Float64, Float: math.Float64frombits(u)}, err == nil, err
	}
	return Number{}, false, nil
}

// Str reads a string or a binary value, if one is next, and returns its
// bytes, which are b's own (nil reads as empty). ok is false, and nothing
// is read, if something else is next.
func (r *Reader) Str() (s []byte, ok bool, err error) {
	c, err := r.Peek()
	if err != nil {
		return nil, false, err
	}
	var size int
	switch {
	case c == 0xc0:
		r.off++
		return nil, true, nil
	case c&0xe0 == 0xa0:
		r.off++
		s, err = r.take(uint64(c & 0x1f))
		return s, err == nil, err
	case c == 0xd9 || c == 0xc4:
		size = 1
	case c == 0xda || c == 0xc5:
		size = 2
	case c == 0xdb || c == 0xc6:
		size = 4
	default:
		return nil, false, nil
	}
	r.off++
	n, err := r.uint(size)
	if err != nil {
		return nil, false, err
	}
	s, err = r.take(n)
	return s, err == nil, err
}

// String reads a string (nil reads as "").
func (r *Reader) String() (string, error) {
	at := r.off
	c, err := r.byte()
	if err != nil {
		return "", err
	}
	var n uint64
	switch {
	case c == 0xc0:
		return "", nil
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, err = r.uint(1)
	case c == 0xda:
		n, err = r.uint(2)
	case c == 0xdb:
		n, err = r.uint(4)
	default:
		r.off = at
		return "", r.errorf("type 0x%02x, want a string", c)
	}
	if err != nil {
		return "", err
	}
	b, err := r.take(n)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Skip reads past one value, whatever it holds, nested at most MaxDepth
// deep. It works without recursion.
func (r *Reader) Skip() error { return r.SkipIn(0) }

// SkipIn is Skip of a value inside depth arrays and maps already: with
// them, it is nested at most MaxDepth deep.
func (r *Reader) SkipIn(depth int) error {
	// A value that is not an array or a map is all read here.
	left, err := r.skipHeader() // values left at this depth
	if err != nil || left == 0 {
		return err
	}
	if err := r.Nest(depth); err != nil {
		return err
	}
	// Values left in each enclosing container, the top level's none
	// first: on the stack while the nesting is shallow, as it nearly
	// always is, so that a goroutine with a small stack does not grow it
	// to skip a value.
	var shallow [8]uint64
	open := append(shallow[:0], 0)
	for {
		for left == 0 {
			if len(open) == 0 {
				return nil
			}
			left = open[len(open)-1]
			open = open[:len(open)-1]
		}
		left--
		n, err := r.skipHeader()
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if err := r.Nest(depth + len(open)); err != nil {
			return err
		}
		open = append(open, left)
		left = n
	}
}

// Nest returns an error if an array or a map inside depth others would
// be nested deeper than MaxDepth.
func (r *Reader) Nest(depth int) error {
	if depth >= MaxDepth {
		return r.errorf("nested deeper than %d", MaxDepth)
	}
	return nil
}

// skipHeader reads one value's header and skips its bytes; for an array or
// a map it returns how many values it holds (a map's keys and values
// counted apart), which the caller skips next.
func (r *Reader) skipHeader() (uint64, error) {
	c, err := r.byte()
	if err != nil {
		return 0, err
	}
	var n uint64 // bytes to skip, or values held
	container := false
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		return 0, nil
	case c&0xf0 == 0x80:
		n, container = 2*uint64(c&0x0f), true
	case c&0xf0 == 0x90:
		n, container = uint64(c&0x0f), true
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		n, err = r.uint(1)
	case c == 0xc5 || c == 0xda:
		n, err = r.uint(2)
	case c == 0xc6 || c == 0xdb:
		n, err = r.uint(4)
	case c == 0xc7 || c == 0xc8 || c == 0xc9: // ext 8/16/32: length, type, data
		n, err = r.uint(1 << (c - 0xc7))
		n++
	case c == 0xca:
		n = 4
	case c == 0xcb:
		n = 8
	case c >= 0xcc && c <= 0xcf:
		n = 1 << (c - 0xcc)
	case c >= 0xd0 && c <= 0xd3:
		n = 1 << (c - 0xd0)
	case c >= 0xd4 && c <= 0xd8: // fixext 1..16: type, data
		n = 1 + 1<<(c-0xd4)
	case c == 0xdc:
		n, err = r.uint(2)
		container = true
	case c == 0xdd:
		n, err = r.uint(4)
		container = true
	case c == 0xde:
		n, err = r.uint(2)
		n, container = 2*n, true
	case c == 0xdf:
		n, err = r.uint(4)
		n, container = 2*n, true
	default: // 0xc1 is never used
		return 0, r.errorf("type 0x%02x is not msgpack", c)
	}
	if err != nil {
		return 0, err
	}
	if container {
		if n > uint64(r.remaining()) { // every value takes a byte at least
			return 0, r.errorf("%d values claimed, %d bytes left", n, r.remaining())
		}
		return n, nil
	}
	_, err = r.take(n)
	return 0, err
}

// Check reports whether b starts with one well-formed msgpack value whose
// lengths fit in b and whose nesting is at most MaxDepth.
func Check(b []byte) error {
	return NewReader(b).Skip()
}

// Unmarshal is msgpack.Unmarshal of b, which may come from anywhere, once
// Check has passed it.
func Unmarshal(b []byte, v any) error {
	if err := Check(b); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}

// Describe returns what the next value is, as an error message quotes
// it, without reading it: "nil", "bool true", "int 300", "uint
// 18446744073709551615", "float64 2.5", `string "abc"`, "binary of 12
// bytes", "array of 3", "map of 2", "timestamp", "ext type 5 of 4
// bytes". A string is quoted clipped (errs.Clip), and then says so and
// how long it is. What cannot be read is "malformed msgpack".
func (r *Reader) Describe() string {
	at := *r
	c, err := at.Peek()
	if err != nil {
		return "no value"
	}
	switch {
	case c == 0xc0:
		return "nil"
	case c == 0xc2:
		return "bool false"
	case c == 0xc3:
		return "bool true"
	case c&0xf0 == 0x90 || c == 0xdc || c == 0xdd:
		if n, err := at.ArrayLen(); err == nil {
			return "array of " + strconv.Itoa(n)
		}
	case c&0xf0 == 0x80 || c == 0xde || c == 0xdf:
		if n, _, err := at.MapLen(); err == nil {
			return "map of " + strconv.Itoa(n)
		}
	case c >= 0xc4 && c <= 0xc6:
		if s, _, err := at.Str(); err == nil {
			return "binary of " + byteCount(uint64(len(s)))
		}
	case c&0xe0 == 0xa0 || c >= 0xd9 && c <= 0xdb:
		if s, _, err := at.Str(); err == nil {
			if clipped := errs.Clip(string(s)); clipped != string(s) {
				return "string " + strconv.Quote(clipped) + " (clipped, " + strconv.Itoa(len(s)) + " bytes)"
			}
			return "string " + strconv.Quote(string(s))
		}
	case c >= 0xc7 && c <= 0xc9 || c >= 0xd4 && c <= 0xd8:
		return at.describeExt(c)
	default:
		if n, ok, err := at.Number(); ok && err == nil {
			switch n.Kind {
			case Int:
				return "int " + strconv.FormatInt(n.Int, 10)
			case BigUint:
				return "uint " + strconv.FormatUint(n.Uint, 10)
			case Float32:
				return "float32 " + strconv.FormatFloat(n.Float, 'g', -1, 32)
			}
			return "float64 " + strconv.FormatFloat(n.Float, 'g', -1, 64)
		}
	}
	return "malformed msgpack"
}

// describeExt describes the extension value whose type byte, c, is next.
func (r *Reader) describeExt(c byte) string {
	r.off++
	var n uint64
	var err error
	if c >= 0xd4 {
		n = 1 << (c - 0xd4)
	} else {
		n, err = r.uint(1 << (c - 0xc7))
	}
	if err != nil {
		return "malformed msgpack"
	}
	typ, err := r.byte()
	if err != nil {
		return "malformed msgpack"
	}
	if int8(typ) == -1 {
		return "timestamp"
	}
	return "ext type " + strconv.Itoa(int(int8(typ))) + " of " + byteCount(n)
}

// byteCount is "1 byte" or "n bytes".
func byteCount(n uint64) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatUint(n, 10) + " bytes"
}
