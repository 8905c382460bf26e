package mpfit

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type list struct {
	V    int8
	Next *list
}

type loop *loop

type words struct {
	S   string
	Tag []string
	At  map[string]bool
	Any any
}

type Inner struct{ N uint8 }

type outer struct {
	Inner
	Other string
}

// TestCheck covers what the runtime's tests do not: types that refer to
// themselves, types no number can land in, an inlined struct decoded from
// a nested map under its own name, and data nested too deep around and
// inside the parts of a type that are walked.
func TestCheck(t *testing.T) {
	t.Parallel()
	tooDeep := append(bytes.Repeat([]byte{0x91}, mpscan.MaxDepth+1), 0xc0)
	for _, typ := range []reflect.Type{reflect.TypeFor[list](), reflect.TypeFor[[]any](), reflect.TypeFor[[][][]int8](), reflect.TypeFor[words]()} {
		if err := For(typ).Check(tooDeep); !errors.Is(err, mpscan.ErrMalformed) {
			t.Errorf("%v: %d deep: %v, want ErrMalformed", typ, mpscan.MaxDepth+1, err)
		}
		if err := For(typ).Check(tooDeep[1:]); errors.Is(err, mpscan.ErrMalformed) {
			t.Errorf("%v: %d deep: %v", typ, mpscan.MaxDepth, err)
		}
	}
	deepList := bytes.Repeat([]byte{0x81, 0xa4, 'N', 'e', 'x', 't'}, mpscan.MaxDepth+1)
	if err := For(reflect.TypeFor[list]()).Check(append(deepList, 0xc0)); !errors.Is(err, mpscan.ErrMalformed) {
		t.Errorf("list %d deep: %v, want ErrMalformed", mpscan.MaxDepth+1, err)
	}
	deep := map[string]any{"V": 1}
	tail := deep
	for range 50 {
		next := map[string]any{"V": 2}
		tail["Next"] = next
		tail = next
	}
	tail["V"] = 300
	if err := For(reflect.TypeFor[list]()).Check(marshal(t, deep)); err == nil || err.Error() != `field "`+repeat("Next.", 50)+`V" (msgpack key "`+repeat("Next.", 50)+`V"): want int8, found int 300, out of its range` {
		t.Errorf("50 deep: %v", err)
	}
	if c := For(reflect.TypeFor[loop]()); c.root != nil {
		t.Error("a pointer to itself has something to check")
	}
	if err := For(reflect.TypeFor[loop]()).Check(marshal(t, 1)); err != nil {
		t.Errorf("a pointer to itself: %v", err)
	}
	if c := For(reflect.TypeFor[words]()); c.root != nil {
		t.Error("a struct of strings, bools and interfaces has something to check")
	}
	if err := For(reflect.TypeFor[outer]()).Check(marshal(t, map[string]any{"Inner": map[string]any{"N": 256}})); err == nil || err.Error() != `field "Inner.N" (msgpack key "Inner.N"): want uint8, found int 256, out of its range` {
		t.Errorf("nested map under an inlined struct's name: %v", err)
	}
	if first, second := For(reflect.TypeFor[outer]()), For(reflect.TypeFor[outer]()); first != second {
		t.Error("For made two Checkers of one type")
	}
	var e *Error
	if err := For(reflect.TypeFor[int8]()).Check(marshal(t, 200)); !errors.As(err, &e) || err.Error() != "want int8, found int 200, out of its range" {
		t.Errorf("int8 alone: %v", err)
	}
}

func repeat(s string, n int) string { return string(bytes.Repeat([]byte(s), n)) }

type narrow struct {
	A int8
	B uint16
	C []int8
	D map[string]uint8
	E *int16
	F float32
	G uint64
	H int
	P []narrowPair
	Q struct{ S string }
}

type narrowPair struct {
	L int8
	R []uint8 // bytes
}

type wide struct {
	A int64
	B int64
	C []int64
	D map[string]int64
	E *int64
	F float64
	G uint64
	H int64
	P []widePair
	Q struct{ S string }
}

type widePair struct {
	L int64
	R []uint8
}

// FuzzCheck: Check refuses as malformed what mpscan.Check refuses, and
// nothing else; and when it passes data that msgpack decodes into narrow,
// every number decoded is the number encoded: decoding narrow's encoding
// into wide, whose fields hold any of them, gives what decoding data into
// wide gives.
func FuzzCheck(f *testing.F) {
	f.Add(marshal(f, map[string]any{"A": 1, "B": 2, "C": []int{3}, "D": map[string]int{"k": 4}, "E": 5, "F": 6, "G": uint64(math.MaxUint64), "H": -7}))
	f.Add(marshal(f, map[string]any{"A": 300}))
	f.Add(marshal(f, map[string]any{"B": -1, "F": 1 << 25}))
	f.Add(marshal(f, []any{1, 2, []int{3}, nil, nil, 1.5, 7, 8, nil, nil}))
	f.Add(marshal(f, map[string]any{"P": []any{[]any{1, "x"}, []any{2}, map[string]any{"L": 200}}, "Q": map[string]any{"S": "s"}}))
	f.Add(marshal(f, map[string]any{"P": []any{[]any{[]any{[]any{}}}}, "C": [][]int{{1}}}))
	c := For(reflect.TypeFor[narrow]())
	f.Fuzz(func(t *testing.T, data []byte) {
		err := c.Check(data)
		scanErr := mpscan.Check(data)
		var e *Error
		switch {
		case scanErr != nil && err == nil:
			t.Fatalf("Check passed % x, which mpscan.Check refuses: %v", data, scanErr)
		case scanErr == nil && err != nil && !errors.As(err, &e):
			t.Fatalf("Check refused % x with %v, which is not an *Error, and mpscan.Check passes it", data, err)
		case scanErr != nil:
			return
		}
		var n narrow
		var w, back wide
		if err != nil || msgpack.Unmarshal(data, &n) != nil || msgpack.Unmarshal(data, &w) != nil {
			return
		}
		if math.IsNaN(float64(n.F)) {
			return
		}
		if err := msgpack.Unmarshal(marshal(t, &n), &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normal(back), normal(w)) {
			t.Fatalf("Check passed % x, but it decodes into narrow as %+v, into wide as %+v", data, back, w)
		}
	})
}

// normal makes empty and nil slices and maps alike, which a round trip
// through narrow does not keep apart.
func normal(w wide) wide {
	if len(w.C) == 0 {
		w.C = nil
	}
	if len(w.D) == 0 {
		w.D = nil
	}
	return w
}

type benchJob struct {
	To       string
	Subject  string
	N        int
	Priority int8
	Port     uint16
	Score    float64
	Tags     []string
	Lines    []benchLine
	At       time.Time
}

type benchLine struct {
	SKU string
	Qty int32
}

// BenchmarkCheck measures Check on a job with the usual mix of fields, the
// same as the runtime's BenchmarkDecodePayload decodes.
func BenchmarkCheck(b *testing.B) {
	data := marshal(b, &benchJob{
		To: "a@example.com", Subject: "hello", N: 1, Priority: 3, Port: 8080, Score: 0.5,
		Tags:  []string{"a", "b"},
		Lines: []benchLine{{"x-1", 2}, {"y-2", 5}},
		At:    time.Unix(1700000000, 0),
	})
	c := For(reflect.TypeFor[benchJob]())
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Check(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScan measures mpscan.Check on the same data, for comparison.
func BenchmarkScan(b *testing.B) {
	data := marshal(b, &benchJob{
		To: "a@example.com", Subject: "hello", N: 1, Priority: 3, Port: 8080, Score: 0.5,
		Tags:  []string{"a", "b"},
		Lines: []benchLine{{"x-1", 2}, {"y-2", 5}},
		At:    time.Unix(1700000000, 0),
	})
	b.ReportAllocs()
	for b.Loop() {
		if err := mpscan.Check(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCheckOneValue: a payload is exactly one msgpack value: bytes after
// it are refused, and so is nothing at all; a nil for a struct (which
// msgpack would decode as its zero value) is refused, while a nil for a
// pointer, a slice or a map decodes as nil and is taken.
func TestCheckOneValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		typ  reflect.Type
		data []byte
		want string // "" for none
	}{
		{"struct", reflect.TypeFor[list](), marshal(t, list{V: 1}), ""},
		{"struct and a byte after", reflect.TypeFor[list](), append(marshal(t, list{V: 1}), 0x01), "1 bytes after the value"},
		{"struct without numbers and bytes after", reflect.TypeFor[words](), append(marshal(t, words{S: "a"}), 0xc0, 0xc0), "2 bytes after the value"},
		{"nothing", reflect.TypeFor[words](), nil, "malformed"},
		{"nil for a struct", reflect.TypeFor[list](), []byte{0xc0}, "want mpfit.list (a map of its fields), found nil"},
		{"nil for a struct without numbers", reflect.TypeFor[words](), []byte{0xc0}, "want mpfit.words (a map of its fields), found nil"},
		{"nil for a pointer", reflect.TypeFor[*list](), []byte{0xc0}, ""},
		{"nil for a slice", reflect.TypeFor[[]int](), []byte{0xc0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := For(tc.typ).Check(tc.data)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want))):
				t.Fatalf("Check: %v, want an error containing %q", err, tc.want)
			}
			if trailing := bytes.Contains([]byte(tc.want), []byte("after")); trailing && !errors.Is(err, mpscan.ErrMalformed) {
				t.Errorf("Check: %v, want it to wrap mpscan.ErrMalformed", err)
			}
		})
	}
}
