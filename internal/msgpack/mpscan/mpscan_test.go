package mpscan

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSkipReadsExactlyOneValue: for values of every msgpack type, Skip
// reads the whole encoding and nothing of what follows.
func TestSkipReadsExactlyOneValue(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		nil, true, false, 0, 1, 127, 128, 255, 256, 65535, 65536, int64(math.MaxInt64), -1, -32, -33, -129, -40000, int64(math.MinInt64),
		uint64(math.MaxUint64), float32(1.5), 2.5, "", "a", strings.Repeat("s", 31), strings.Repeat("s", 32), strings.Repeat("s", 300), strings.Repeat("s", 70000),
		[]byte{}, []byte("bin"), bytes.Repeat([]byte{1}, 300), bytes.Repeat([]byte{1}, 70000),
		[]any{}, []any{1, "two", []any{3}}, make([]int, 20), make([]int, 70000),
		map[string]any{}, map[string]any{"a": 1, "b": map[string]any{"c": []any{nil}}}, map[int]int{1: 2, 3: 4, 5: 6, 7: 8, 9: 10, 11: 12, 13: 14, 15: 16, 17: 18, 19: 20, 21: 22, 23: 24, 25: 26, 27: 28, 29: 30, 31: 32},
		time.Unix(1, 2), time.Unix(1<<40, 0), struct{ A, B int }{1, 2},
	} {
		b := marshal(t, v)
		r := NewReader(append(b, 0xff))
		if err := r.Skip(); err != nil {
			t.Errorf("Skip of %T %.40v (% x…): %v", v, v, b[:min(len(b), 8)], err)
			continue
		}
		if rest := r.Rest(); len(rest) != 1 || rest[0] != 0xff {
			t.Errorf("Skip of %T %.40v left %d bytes, want the 1 after it", v, v, len(rest))
		}
	}
	// Every ext width.
	for _, b := range [][]byte{
		{0xd4, 1, 0}, {0xd5, 1, 0, 0}, {0xd6, 1, 0, 0, 0, 0}, {0xd7, 1, 0, 0, 0, 0, 0, 0, 0, 0}, append([]byte{0xd8, 1}, make([]byte, 16)...),
		{0xc7, 2, 1, 0, 0}, {0xc8, 0, 2, 1, 0, 0}, {0xc9, 0, 0, 0, 2, 1, 0, 0},
	} {
		r := NewReader(b)
		if err := r.Skip(); err != nil || r.Rest() != nil {
			t.Errorf("Skip of ext % x = %v, rest % x", b, err, r.Rest())
		}
	}
}

func TestReaders(t *testing.T) {
	t.Parallel()
	b := marshal(t, []any{int64(-5), uint64(1 << 40), "name", map[string]string{"k": "v"}, nil})
	r := NewReader(append(b, 'p', 'l'))
	if n, err := r.ArrayLen(); n != 5 || err != nil {
		t.Fatalf("ArrayLen = %d, %v", n, err)
	}
	if v, err := r.Int(); v != -5 || err != nil {
		t.Fatalf("Int = %d, %v", v, err)
	}
	if v, err := r.Int(); v != 1<<40 || err != nil {
		t.Fatalf("Int = %d, %v", v, err)
	}
	if s, err := r.String(); s != "name" || err != nil {
		t.Fatalf("String = %q, %v", s, err)
	}
	if n, isNil, err := r.MapLen(); n != 1 || isNil || err != nil {
		t.Fatalf("MapLen = %d, %v, %v", n, isNil, err)
	}
	if k, _ := r.String(); k != "k" {
		t.Fatalf("key %q", k)
	}
	if v, _ := r.String(); v != "v" {
		t.Fatalf("value %q", v)
	}
	if _, isNil, err := r.MapLen(); !isNil || err != nil {
		t.Fatalf("MapLen of nil = %v, %v", isNil, err)
	}
	if string(r.Rest()) != "pl" {
		t.Fatalf("Rest = %q", r.Rest())
	}
	for _, v := range []int64{0, 127, -32, -33, 128, 255, 256, math.MaxInt16 + 1, math.MaxInt32 + 1, math.MinInt8, math.MinInt16, math.MinInt32, math.MinInt64, math.MaxInt64} {
		if got, err := NewReader(marshal(t, v)).Int(); got != v || err != nil {
			t.Errorf("Int of %d = %d, %v", v, got, err)
		}
	}
}

func TestRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		read func(*Reader) error
		in   []byte
		want string
	}{
		{"empty", (*Reader).Skip, nil, "0 left"},
		{"reserved type", (*Reader).Skip, []byte{0xc1}, "0xc1 is not msgpack"},
		{"string cut short", (*Reader).Skip, []byte{0xdb, 0, 0, 1, 0, 'a'}, "256 bytes claimed, 1 left"},
		{"array claims more than it holds", (*Reader).Skip, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, "values claimed"},
		{"map claims more than it holds", (*Reader).Skip, []byte{0xdf, 0, 0, 0, 3, 1, 1}, "values claimed"},
		{"too deep", (*Reader).Skip, append(bytes.Repeat([]byte{0x91}, MaxDepth+1), 0xc0), "nested deeper than 256"},
		{"int of a string", func(r *Reader) error { _, err := r.Int(); return err }, []byte{0xa1, 'x'}, "want an integer"},
		{"uint64 over int64", func(r *Reader) error { _, err := r.Int(); return err }, marshal(t, uint64(math.MaxUint64)), "does not fit an int64"},
		{"string of an int", func(r *Reader) error { _, err := r.String(); return err }, []byte{0x05}, "want a string"},
		{"string claims 64 MB", func(r *Reader) error { _, err := r.String(); return err }, []byte{0xdb, 4, 0, 0, 0, 'q'}, "67108864 bytes claimed"},
		{"map header of an array", func(r *Reader) error { _, _, err := r.MapLen(); return err }, []byte{0x90}, "want a map"},
		{"map of 2^32-1 in 10 bytes", func(r *Reader) error { _, _, err := r.MapLen(); return err }, append([]byte{0xdf, 0xff, 0xff, 0xff, 0xff}, make([]byte, 10)...), "entries claimed"},
		{"array header of a map", func(r *Reader) error { _, err := r.ArrayLen(); return err }, []byte{0x80}, "want an array"},
	} {
		err := tc.read(NewReader(tc.in))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrMalformed saying %q", tc.name, err, tc.want)
		}
	}
	// MaxDepth itself is fine.
	if err := Check(append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0)); err != nil {
		t.Errorf("Check at MaxDepth: %v", err)
	}
}

// TestDeepNestingDoesNotRecurse: millions of levels are refused at
// MaxDepth, at the cost of reading that far, not of a stack per level.
func TestDeepNestingDoesNotRecurse(t *testing.T) {
	t.Parallel()
	b := bytes.Repeat([]byte{0x91}, 12<<20)
	if err := Check(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Check = %v", err)
	}
}

// FuzzSkip: Skip never panics, and what it accepts is one value that
// msgpack/v5 reads to the same length.
func FuzzSkip(f *testing.F) {
	f.Add(marshal(f, map[string]any{"a": []any{1, "b", 2.5, nil, true}}))
	f.Add([]byte{0xc7, 2, 1, 0, 0})
	f.Add([]byte{0x93, 0xd4, 1, 0, 0xcf, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(b)
		if err := r.Skip(); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		br := bytes.NewReader(b)
		if err := msgpack.NewDecoder(br).Skip(); err != nil {
			t.Fatalf("Skip accepted % x, msgpack/v5 refuses it: %v", b, err)
		}
		if br.Len() != len(r.Rest()) {
			t.Fatalf("Skip left %d bytes, msgpack/v5 %d", len(r.Rest()), br.Len())
		}
	})
}

// TestNumber reads integers of every width as the value encoded, unsigned
// ones above math.MaxInt64 apart, and floats with their width.
func TestNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want Number
	}{
		{0, Number{Kind: Int}},
		{-32, Number{Kind: Int, Int: -32}},
		{int8(-100), Number{Kind: Int, Int: -100}},
		{uint8(200), Number{Kind: Int, Int: 200}},
		{uint16(60000), Number{Kind: Int, Int: 60000}},
		{int32(math.MinInt32), Number{Kind: Int, Int: math.MinInt32}},
		{uint32(math.MaxUint32), Number{Kind: Int, Int: math.MaxUint32}},
		{int64(math.MinInt64), Number{Kind: Int, Int: math.MinInt64}},
		{uint64(math.MaxInt64), Number{Kind: Int, Int: math.MaxInt64}},
		{uint64(math.MaxUint64), Number{Kind: BigUint, Uint: math.MaxUint64}},
		{float32(1.5), Number{Kind: Float32, Float: 1.5}},
		{2.25, Number{Kind: Float64, Float: 2.25}},
	} {
		b := marshal(t, tc.v)
		if tc.v == uint64(math.MaxInt64) || tc.v == uint64(math.MaxUint64) {
			b = append([]byte{0xcf}, binary.BigEndian.AppendUint64(nil, tc.v.(uint64))...)
		}
		r := NewReader(b)
		got, ok, err := r.Number()
		if got != tc.want || !ok || err != nil || r.Rest() != nil {
			t.Errorf("Number of %T %v (% x) = %+v, %v, %v, rest % x; want %+v", tc.v, tc.v, b, got, ok, err, r.Rest(), tc.want)
		}
	}
	for _, v := range []any{nil, "1", true, []int{1}} {
		b := marshal(t, v)
		r := NewReader(b)
		if _, ok, err := r.Number(); ok || err != nil || len(r.Rest()) != len(b) {
			t.Errorf("Number of %T %v = %v, %v, read %d bytes; want nothing read", v, v, ok, err, len(b)-len(r.Rest()))
		}
	}
	if _, _, err := NewReader([]byte{0xcb, 0, 0}).Number(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Number of a cut float64 = %v, want ErrMalformed", err)
	}
}

// TestStrAndNil: Str reads strings and binary values as b's own bytes, and
// reads nothing of another type; Nil reads a nil only.
func TestStrAndNil(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", 300)
	for _, v := range []any{"", "key", strings.Repeat("s", 40), long, strings.Repeat("s", 70000), []byte("bin"), bytes.Repeat([]byte{1}, 300), nil} {
		b := marshal(t, v)
		r := NewReader(b)
		s, ok, err := r.Str()
		want := ""
		switch v := v.(type) {
		case string:
			want = v
		case []byte:
			want = string(v)
		}
		if string(s) != want || !ok || err != nil || r.Rest() != nil {
			t.Errorf("Str of %T %.10v = %.10q, %v, %v, rest %d bytes", v, v, s, ok, err, len(r.Rest()))
		}
	}
	r := NewReader(marshal(t, 5))
	if _, ok, err := r.Str(); ok || err != nil || r.Rest() == nil {
		t.Errorf("Str of an int = %v, %v, and read it", ok, err)
	}
	if r.Nil() || r.Rest() == nil {
		t.Error("Nil read an int")
	}
	if c, err := r.Peek(); c != 5 || err != nil {
		t.Errorf("Peek = %#x, %v", c, err)
	}
	r = NewReader([]byte{0xc0})
	if !r.Nil() || r.Rest() != nil {
		t.Error("Nil did not read a nil")
	}
	if _, err := r.Peek(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Peek at the end = %v, want ErrMalformed", err)
	}
	if _, _, err := NewReader([]byte{0xda, 0, 9, 'a'}).Str(); !errors.Is(err, ErrMalformed) {
		t.Errorf("Str of a cut string = %v, want ErrMalformed", err)
	}
}

// TestDescribe: Describe says what each msgpack type holds, quotes a
// string clipped (saying so), and reads nothing.
func TestDescribe(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 40) // 80 bytes
	for _, tc := range []struct {
		data []byte
		want string
	}{
		{marshal(t, nil), "nil"},
		{marshal(t, true), "bool true"},
		{marshal(t, false), "bool false"},
		{marshal(t, 300), "int 300"},
		{marshal(t, -5), "int -5"},
		{marshal(t, uint64(math.MaxUint64)), "uint 18446744073709551615"},
		{marshal(t, float32(1.5)), "float32 1.5"},
		{marshal(t, 2.25), "float64 2.25"},
		{marshal(t, "abc"), `string "abc"`},
		{marshal(t, "tab\there"), `string "tab\there"`},
		{marshal(t, long), `string "` + strings.Repeat("é", 32) + `…" (clipped, 80 bytes)`},
		{marshal(t, []byte{1, 2, 3}), "binary of 3 bytes"},
		{marshal(t, []int{1, 2}), "array of 2"},
		{marshal(t, map[string]int{"a": 1}), "map of 1"},
		{marshal(t, time.Unix(1, 0)), "timestamp"},
		{[]byte{0xd4, 0x05, 0x00}, "ext type 5 of 1 byte"},
		{[]byte{0xc7, 0x03, 0xfe, 1, 2, 3}, "ext type -2 of 3 bytes"},
		{[]byte{0xa5, 'a'}, "malformed msgpack"},
		{nil, "no value"},
	} {
		r := NewReader(tc.data)
		if got := r.Describe(); got != tc.want {
			t.Errorf("Describe of % x = %q, want %q", tc.data, got, tc.want)
		}
		if len(tc.data) > 0 && len(r.Rest()) != len(tc.data) {
			t.Errorf("Describe of % x read %d bytes", tc.data, len(tc.data)-len(r.Rest()))
		}
	}
}
