package generator

import (
	"context"
	"fmt"
	"go/token"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

// The tests of this file hold each verdict of the comparison against what
// happens to a job in flight: bytes that the old struct encoded, published
// as they would be on the queue, handled by a worker of the new struct.
// A change called safe must deliver every sample unchanged; a change
// called breaking must lose or refuse at least one.

type box[T any] struct{ V T }

// handleAs publishes payload as a job of type T on queueytest's backend
// and handles it with runtime.Handle, as generated code does: it returns
// the job the handler got, or the reason the job was dead-lettered.
func handleAs[T any](t *testing.T, payload []byte) (T, string) {
	t.Helper()
	ctx := context.Background()
	q := runtime.QueueConfig{Name: "evolve.job", Kind: runtime.KindOf[T](), MaxAttempts: 1}
	b := queueytest.New(t, q)
	env := &runtime.Envelope{ID: "job-1", Queue: q.Name, Kind: q.Kind, Payload: payload, Attempt: 1, MaxAttempts: 1, EnqueuedAt: time.Now()}
	if err := b.Publish(ctx, env, 0); err != nil {
		t.Fatal(err)
	}
	w := runtime.NewWorker(b)
	var got T
	runtime.Handle(w, q, func(_ context.Context, job T) error { got = job; return nil })
	outs := queueytest.Drain(t, b, w)
	if len(outs) != 1 {
		t.Fatalf("%d outcomes, want 1: %+v", len(outs), outs)
	}
	if outs[0].Result != queueytest.Done {
		return got, fmt.Sprintf("%s: %s", outs[0].Result, outs[0].Reason)
	}
	return got, ""
}

// inFlight encodes v as the producer of its struct did.
func inFlight(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// same reports whether n holds the value o had: element by element (an
// array that grows holds zero values after them), equal once converted to
// n's type, or printed alike (two maps).
func same(o, n any) bool {
	ov, nv := reflect.ValueOf(o), reflect.ValueOf(n)
	if ov.Kind() == reflect.Pointer && nv.Kind() != reflect.Pointer {
		if ov.IsNil() {
			return nv.IsZero()
		}
		ov = ov.Elem()
	}
	if nv.Kind() == reflect.Pointer && ov.Kind() != reflect.Pointer {
		nv = nv.Elem()
	}
	seq := func(k reflect.Kind) bool { return k == reflect.Array || k == reflect.Slice }
	switch {
	case seq(ov.Kind()) && seq(nv.Kind()):
		// An array that grows gets zero values after the old elements.
		if nv.Len() < ov.Len() {
			return false
		}
		for i := range nv.Len() {
			if i >= ov.Len() && !nv.Index(i).IsZero() || i < ov.Len() && !same(ov.Index(i).Interface(), nv.Index(i).Interface()) {
				return false
			}
		}
		return true
	case ov.Type().ConvertibleTo(nv.Type()):
		return reflect.DeepEqual(ov.Convert(nv.Type()).Interface(), nv.Interface())
	}
	return fmt.Sprint(ov.Interface()) == fmt.Sprint(nv.Interface())
}

type wireCase struct {
	name     string
	old, now string // wire types, as the record writes them
	// carried runs every sample through and returns "" when each arrives
	// unchanged, or what happened to the first that does not.
	carried func(t *testing.T) string
}

func evolve[Old, New any](old, now string, samples ...Old) wireCase {
	return wireCase{
		name: fmt.Sprintf("%T to %T", *new(Old), *new(New)), old: old, now: now,
		carried: func(t *testing.T) string {
			for _, s := range samples {
				got, reason := handleAs[box[New]](t, inFlight(t, box[Old]{V: s}))
				switch {
				case reason != "":
					return fmt.Sprintf("%v: %s", s, reason)
				case !same(s, got.V):
					return fmt.Sprintf("%v arrives as %v", s, got.V)
				}
			}
			return ""
		},
	}
}

func ptr[T any](v T) *T { return &v }

// verdict returns the breaking changes the comparison finds from wire
// type old to now, of a field V; records holds the structs they name.
func verdict(old, now string, records recordStructs) []string {
	r := &record{Types: records}
	c := &comparison{old: r, now: r, merged: &record{Types: recordStructs{}}, seen: map[[2]string]bool{}}
	for name, s := range records {
		c.merged.Types[name] = &recordStruct{AsArray: s.AsArray, Fields: s.Fields}
	}
	c.types(old, now, "V", token.Position{})
	var out []string
	for _, ch := range c.changes {
		if ch.breaking {
			out = append(out, ch.msg)
		}
	}
	return out
}

// TestWireVerdicts: each change of a field's type that the comparison
// calls safe carries every sample value through a real encode, publish
// and handle; each it calls breaking refuses or changes one.
func TestWireVerdicts(t *testing.T) {
	t.Parallel()
	cases := []wireCase{
		// Numbers that widen.
		evolve[int8, int16]("int8", "int16", math.MinInt8, math.MaxInt8, 0),
		evolve[int32, int64]("int32", "int64", math.MinInt32, math.MaxInt32, 0),
		evolve[uint8, uint16]("uint8", "uint16", 0, math.MaxUint8),
		evolve[uint8, int16]("uint8", "int16", 0, math.MaxUint8),
		evolve[uint32, int64]("uint32", "int64", 0, math.MaxUint32),
		evolve[uint32, uint64]("uint32", "uint64", 0, math.MaxUint32),
		evolve[float32, float64]("float32", "float64", 0.1, -math.MaxFloat32, math.SmallestNonzeroFloat32),
		evolve[int16, float32]("int16", "float32", math.MinInt16, math.MaxInt16),
		evolve[uint16, float32]("uint16", "float32", 0, math.MaxUint16),
		evolve[int32, float64]("int32", "float64", math.MinInt32, math.MaxInt32),
		evolve[uint32, float64]("uint32", "float64", 0, math.MaxUint32),
		// Numbers that narrow, change sign or lose precision.
		evolve[int64, int32]("int64", "int32", 1, math.MaxInt64),
		evolve[int16, int8]("int16", "int8", 1, math.MaxInt16),
		evolve[uint16, uint8]("uint16", "uint8", 1, math.MaxUint16),
		evolve[uint8, int8]("uint8", "int8", 1, math.MaxUint8),
		evolve[int8, uint16]("int8", "uint16", 1, -1),
		evolve[int64, uint64]("int64", "uint64", 1, math.MinInt64),
		evolve[uint64, int64]("uint64", "int64", 1, math.MaxUint64),
		evolve[int32, float32]("int32", "float32", 1, math.MaxInt32),
		evolve[int64, float64]("int64", "float64", 1, math.MaxInt64),
		evolve[float64, float32]("float64", "float32", 0.5),
		evolve[float32, int64]("float32", "int64", 3),
		// Other classes.
		evolve[string, []byte]("string", "bytes", "", "héllo"),
		evolve[[]byte, string]("bytes", "string", []byte("héllo"), nil),
		evolve[[2]byte, []byte]("bin[2]", "bytes", [2]byte{1, 2}),
		evolve[[2]byte, [4]byte]("bin[2]", "bin[4]", [2]byte{1, 2}),
		evolve[[4]byte, [2]byte]("bin[4]", "bin[2]", [4]byte{1, 2, 3, 4}),
		evolve[*string, string]("*string", "string", nil, ptr("x")),
		evolve[*int32, int64]("*int32", "int64", nil, ptr[int32](math.MinInt32)),
		evolve[string, *string]("string", "*string", "x", ""),
		evolve[[2]int64, [3]int64]("[2]int64", "[3]int64", [2]int64{1, 2}),
		evolve[[3]int64, [2]int64]("[3]int64", "[2]int64", [3]int64{1, 2, 3}),
		evolve[[2]int64, []int64]("[2]int64", "[]int64", [2]int64{1, 2}),
		evolve[[]int64, [2]int64]("[]int64", "[2]int64", []int64{1, 2, 3}),
		evolve[[]int16, []int32]("[]int16", "[]int32", []int16{math.MinInt16, 0}),
		evolve[[]int32, []int16]("[]int32", "[]int16", []int32{math.MaxInt32}),
		evolve[map[string]uint8, map[string]int64]("map[string]uint8", "map[string]int64", map[string]uint8{"a": math.MaxUint8}),
		evolve[map[int64]string, map[int8]string]("map[int64]string", "map[int8]string", map[int64]string{math.MaxInt64: "a"}),
		evolve[int64, string]("int64", "string", 1),
		evolve[string, int64]("string", "int64", "1"),
		evolve[bool, int64]("bool", "int64", true),
		evolve[int64, bool]("int64", "bool", 1),
		evolve[time.Time, string]("time", "string", time.Unix(1, 0)),
		evolve[[]string, string]("[]string", "string", []string{"a"}),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			breaking := verdict(c.old, c.now, nil)
			lost := c.carried(t)
			switch {
			case len(breaking) == 0 && lost != "":
				t.Errorf("%s to %s is called safe, but a job in flight is not carried: %s", c.old, c.now, lost)
			case len(breaking) > 0 && lost == "":
				t.Errorf("%s to %s is called breaking (%s), but every sample is carried: add the sample it loses", c.old, c.now, breaking[0])
			case lost != "":
				t.Logf("breaking, and so it is: %s", lost)
			}
		})
	}
}

// The structs of TestStructVerdicts: each version of a job, as producers
// of old code and workers of new code have it.
type (
	v1 struct {
		ID   string `msgpack:"id"`
		Note string
		Ref  string `msgpack:"ref"`
	}
	v2Added struct {
		ID      string `msgpack:"id"`
		Note    string
		Ref     string `msgpack:"ref"`
		Carrier string
	}
	v2Removed struct {
		ID  string `msgpack:"id"`
		Ref string `msgpack:"ref"`
	}
	v2RenamedGo struct {
		OrderID string `msgpack:"id"`
		Memo    string `msgpack:"Note,omitempty"`
		Ref     string `msgpack:"ref"`
	}
	v2Alias struct {
		ID   string `msgpack:"id"`
		Note string
		Ref  string `msgpack:"reference,alias:ref"`
	}
	v2RenamedKey struct {
		ID   string `msgpack:"id"`
		Note string
		Ref  string `msgpack:"reference"`
	}
	a1 struct {
		//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
		_msgpack struct{} `msgpack:",as_array"`
		X, Y     string
	}
	a2Added struct {
		//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
		_msgpack struct{} `msgpack:",as_array"`
		X, Y, Z  string
	}
	a2Swapped struct {
		//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
		_msgpack struct{} `msgpack:",as_array"`
		Y, X     string
	}
)

func fields(specs ...string) *recordStruct {
	s := &recordStruct{}
	for _, spec := range specs {
		// key go type [alias]
		w := strings.Fields(spec)
		f := recordField{Key: w[0], Go: w[1], Type: w[2]}
		if len(w) > 3 {
			f.Aliases = []string{w[3]}
		}
		s.Fields = append(s.Fields, f)
	}
	return s
}

// TestStructVerdicts: the same, for changes to a struct's fields.
func TestStructVerdicts(t *testing.T) {
	t.Parallel()
	old := v1{ID: "o-1", Note: "fragile", Ref: "r-9"}
	oldRec := fields("id ID string", "Note Note string", "ref Ref string")
	arr := a1{X: "x", Y: "y"}
	arrRec := fields("X X string", "Y Y string")
	arrRec.AsArray = true
	for _, c := range []struct {
		name  string
		old   *recordStruct
		now   *recordStruct
		check func(t *testing.T) string
	}{
		{"added", oldRec, fields("id ID string", "Note Note string", "ref Ref string", "Carrier Carrier string"), func(t *testing.T) string {
			got, reason := handleAs[v2Added](t, inFlight(t, old))
			return lostUnless(reason, got.ID == old.ID && got.Note == old.Note && got.Ref == old.Ref && got.Carrier == "", got)
		}},
		{"removed", oldRec, fields("id ID string", "ref Ref string"), func(t *testing.T) string {
			got, reason := handleAs[v2Removed](t, inFlight(t, old))
			return lostUnless(reason, got.ID == old.ID && got.Ref == old.Ref, got)
		}},
		{"renamed in Go, omitempty", oldRec, fields("id OrderID string", "Note Memo string", "ref Ref string"), func(t *testing.T) string {
			got, reason := handleAs[v2RenamedGo](t, inFlight(t, old))
			return lostUnless(reason, got.OrderID == old.ID && got.Memo == old.Note && got.Ref == old.Ref, got)
		}},
		{"key renamed with alias", oldRec, fields("id ID string", "Note Note string", "reference Ref string ref"), func(t *testing.T) string {
			got, reason := handleAs[v2Alias](t, inFlight(t, old))
			return lostUnless(reason, got == v2Alias(old), got)
		}},
		{"key renamed", oldRec, fields("id ID string", "Note Note string", "reference Ref string"), func(t *testing.T) string {
			got, reason := handleAs[v2RenamedKey](t, inFlight(t, old))
			return lostUnless(reason, got == v2RenamedKey(old), got)
		}},
		{"as_array field added", arrRec, func() *recordStruct {
			s := fields("X X string", "Y Y string", "Z Z string")
			s.AsArray = true
			return s
		}(), func(t *testing.T) string {
			got, reason := handleAs[a2Added](t, inFlight(t, arr))
			return lostUnless(reason, got.X == arr.X && got.Y == arr.Y, got)
		}},
		{"as_array fields swapped", arrRec, func() *recordStruct {
			s := fields("Y Y string", "X X string")
			s.AsArray = true
			return s
		}(), func(t *testing.T) string {
			got, reason := handleAs[a2Swapped](t, inFlight(t, arr))
			return lostUnless(reason, got.X == arr.X && got.Y == arr.Y, got)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old := &record{Types: recordStructs{"shop.Old": c.old}}
			now := &record{Types: recordStructs{"shop.New": c.now}}
			cmp := &comparison{old: old, now: now, merged: &record{Types: recordStructs{"shop.New": {AsArray: c.now.AsArray}}}, seen: map[[2]string]bool{}}
			cmp.structs("shop.Old", "shop.New", "Job", token.Position{})
			var breaking []string
			for _, ch := range cmp.changes {
				if ch.breaking {
					breaking = append(breaking, ch.msg)
				}
			}
			lost := c.check(t)
			switch {
			case len(breaking) == 0 && lost != "":
				t.Errorf("called safe, but a job in flight is not carried: %s", lost)
			case len(breaking) > 0 && lost == "":
				t.Errorf("called breaking (%s), but the job in flight is carried", breaking[0])
			}
		})
	}
}

// lostUnless is "" when a job was handled and kept is true, else what
// happened to it.
func lostUnless(reason string, kept bool, got any) string {
	switch {
	case reason != "":
		return reason
	case !kept:
		return fmt.Sprintf("arrives as %+v", got)
	}
	return ""
}
