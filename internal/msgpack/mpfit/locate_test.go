package mpfit

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

type item struct {
	SKU string `msgpack:"sku"`
	Qty int64  `msgpack:"qty"`
}

type base struct{ Shard uint8 }

type order struct {
	base
	Count   int64            `msgpack:"count"`
	Name    string           `msgpack:"name"`
	Items   []item           `msgpack:"items"`
	Tags    []string         `msgpack:"tags"`
	Totals  map[string]int   `msgpack:"totals"`
	ByLevel map[int8]string  `msgpack:"by_level"`
	Ship    item             `msgpack:"ship"`
	Ptr     *item            `msgpack:"ptr"`
	At      time.Time        `msgpack:"at"`
	Dotted  int              `msgpack:"a.b"`
	Pair    [2]int           `msgpack:"pair"`
	Blob    []byte           `msgpack:"blob"`
	Nested  map[string][]int `msgpack:"nested"`
	Span    span             `msgpack:"span"`
}

type span struct {
	//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
	_msgpack struct{} `msgpack:",as_array"`
	Left     int
	Right    string
}

// noteV1 and numV2 are one job type before and after a deploy that gave
// the key "n" to a field of another type.
type noteV1 struct {
	Note string `msgpack:"n"`
}

type numV2 struct {
	Num int `msgpack:"n"`
}

// TestLocate: for each kind of mismatch msgpack refuses without saying
// where (it says "invalid code=a3 decoding int64"), Locate names the
// value's path by Go names and by msgpack keys, the type it wants and
// what the payload holds.
func TestLocate(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name    string
		typ     reflect.Type
		payload any
		want    string
	}{
		{"string for an int", reflect.TypeFor[order](), map[string]any{"count": "abc"},
			`field "Count" (msgpack key "count"): want int64, found string "abc"`},
		{"int for a string", reflect.TypeFor[order](), map[string]any{"count": 1, "name": 7},
			`field "Name" (msgpack key "name"): want string, found int 7`},
		{"long string clipped", reflect.TypeFor[order](), map[string]any{"count": long},
			`field "Count" (msgpack key "count"): want int64, found string "` + long[:64] + `…" (clipped, 100 bytes)`},
		{"wrong type deep in a slice of structs", reflect.TypeFor[order](),
			map[string]any{"items": []any{map[string]any{"qty": 1}, map[string]any{"qty": 2}, map[string]any{"sku": "c", "qty": "three"}}},
			`field "Items[2].Qty" (msgpack key "items[2].qty"): want int64, found string "three"`},
		{"nested struct of another type", reflect.TypeFor[order](), map[string]any{"ship": "by sea"},
			`field "Ship" (msgpack key "ship"): want mpfit.item (a map of its fields), found string "by sea"`},
		{"bool in a nested struct", reflect.TypeFor[order](), map[string]any{"ptr": map[string]any{"sku": true}},
			`field "Ptr.SKU" (msgpack key "ptr.sku"): want string, found bool true`},
		{"map for a slice", reflect.TypeFor[order](), map[string]any{"tags": map[string]any{"a": 1}},
			`field "Tags" (msgpack key "tags"): want []string, found map of 1`},
		{"array for a map", reflect.TypeFor[order](), map[string]any{"totals": []any{1, 2}},
			`field "Totals" (msgpack key "totals"): want map[string]int, found array of 2`},
		{"array for a struct of another length", reflect.TypeFor[order](), map[string]any{"ship": []any{"a", 1, 2}},
			`field "Ship" (msgpack key "ship"): want mpfit.item (a map of its fields), found array of 3`},
		{"map value of another type", reflect.TypeFor[order](), map[string]any{"totals": map[string]any{"a": 1, "b": "two"}},
			`field "Totals[\"b\"]" (msgpack key "totals[\"b\"]"): want int, found string "two"`},
		{"map key of another type", reflect.TypeFor[order](), map[string]any{"by_level": map[string]any{"high": "x"}},
			`field "ByLevel[key]" (msgpack key "by_level[key]"): want int8, found string "high"`},
		{"map of slices", reflect.TypeFor[order](), map[string]any{"nested": map[string]any{"a": []any{1, 2.5}}},
			`field "Nested[\"a\"][1]" (msgpack key "nested[\"a\"][1]"): want int, found float64 2.5`},
		{"key reused with another type", reflect.TypeFor[numV2](), noteV1{Note: "hello"},
			`field "Num" (msgpack key "n"): want int, found string "hello"`},
		{"key that is not a plain name", reflect.TypeFor[order](), map[string]any{"a.b": "x"},
			`field "Dotted" (msgpack key "[\"a.b\"]"): want int, found string "x"`},
		{"inlined embedded field", reflect.TypeFor[order](), map[string]any{"Shard": "x"},
			`field "base.Shard" (msgpack key "Shard"): want uint8, found string "x"`},
		{"too many for an array", reflect.TypeFor[order](), map[string]any{"pair": []any{1, 2, 3}},
			`field "Pair" (msgpack key "pair"): want [2]int, found array of 3`},
		{"array for bytes", reflect.TypeFor[order](), map[string]any{"blob": []any{1}},
			`field "Blob" (msgpack key "blob"): want []uint8, found array of 1`},
		{"as_array struct by position", reflect.TypeFor[order](), map[string]any{"span": []any{1, 2}},
			`field "Span.Right" (msgpack key "span[1]"): want string, found int 2`},
		{"type with its own decoding", reflect.TypeFor[order](), map[string]any{"at": "yesterday"},
			`field "At" (msgpack key "at"): want time.Time, found string "yesterday" (msgpack: invalid code=a9 decoding ext len)`},
		{"nil for a time.Time, which msgpack panics on", reflect.TypeFor[order](), map[string]any{"at": nil},
			`field "At" (msgpack key "at"): want time.Time, found nil (msgpack panicked: reflect: call of reflect.Value.IsNil on struct Value)`},
		{"key that is not a string", reflect.TypeFor[order](), map[int]any{1: "x"},
			`field "[key]" (msgpack key "[key]"): want string, found int 1`},
		{"not a map at all", reflect.TypeFor[order](), "an order",
			`want mpfit.order (a map of its fields), found string "an order"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := marshal(t, tc.payload)
			derr := decodeValue(data, tc.typ)
			if derr == nil {
				t.Fatalf("msgpack decodes % x into a %v: no mismatch to locate", data, tc.typ)
			}
			e := For(tc.typ).Locate(data)
			if e == nil {
				t.Fatalf("Locate found nothing; msgpack said %v", derr)
			}
			if e.Error() != tc.want {
				t.Errorf("Locate:\n got %s\nwant %s", e.Error(), tc.want)
			}
			if e.Err == nil {
				t.Error("Locate's error does not carry msgpack's")
			}
		})
	}
}

// TestLocateFindsNothingInGoodData: data msgpack decodes has nothing to
// blame, and neither has data that is not one msgpack value.
func TestLocateFindsNothingInGoodData(t *testing.T) {
	t.Parallel()
	good := order{Count: 1, Items: []item{{"a", 1}}, Totals: map[string]int{"a": 1}, Ptr: &item{}, At: time.Unix(1, 0), Blob: []byte{1}}
	if e := For(reflect.TypeFor[order]()).Locate(marshal(t, good)); e != nil {
		t.Errorf("Locate of a good order: %v", e)
	}
	if e := For(reflect.TypeFor[order]()).Locate([]byte{0x81, 0xa1}); e != nil {
		t.Errorf("Locate of malformed msgpack: %v", e)
	}
}

// TestMsgpackTakesNilForAnyField pins what msgpack does with a nil where
// a field is not a pointer: it decodes it as the field's zero value,
// without an error, as encoding/json does with a null. Check takes it
// too (only a nil for the whole payload is refused), so there is nothing
// for Locate to find. The exception, a struct type with its own decoding
// method such as time.Time, on which msgpack panics, is in TestLocate.
func TestMsgpackTakesNilForAnyField(t *testing.T) {
	t.Parallel()
	data := marshal(t, map[string]any{"count": nil, "name": nil, "ship": nil, "items": nil, "ptr": nil})
	o := order{Count: 9, Name: "x", Ship: item{Qty: 1}, Ptr: &item{}}
	if err := msgpack.Unmarshal(data, &o); err != nil {
		t.Fatalf("msgpack refuses a nil for a field: %v", err)
	}
	if o.Count != 0 || o.Name != "" || o.Ship != (item{}) || o.Ptr != nil {
		t.Errorf("nil fields decoded as %+v, want zero values", o)
	}
	if err := For(reflect.TypeFor[order]()).Check(data); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCheckErrorNamesKeys: a number out of its field's range, which
// msgpack would wrap around without an error, is refused by Check with
// the same paths as Locate gives.
func TestCheckErrorNamesKeys(t *testing.T) {
	t.Parallel()
	type small struct {
		Lines []struct {
			Qty int8 `msgpack:"qty"`
		} `msgpack:"lines"`
	}
	data := marshal(t, map[string]any{"lines": []any{map[string]any{"qty": 1}, map[string]any{"qty": int64(1) << 40}}})
	err := For(reflect.TypeFor[small]()).Check(data)
	var e *Error
	if !errors.As(err, &e) || e.Path != "Lines[1].Qty" || e.Key != "lines[1].qty" || e.Found != "int 1099511627776" || e.Why != outOfRange {
		t.Fatalf("Check: %#v, want Lines[1].Qty (lines[1].qty) out of range", err)
	}
	if want := `field "Lines[1].Qty" (msgpack key "lines[1].qty"): want int8, found int 1099511627776, out of its range`; err.Error() != want {
		t.Errorf("Check:\n got %s\nwant %s", err, want)
	}
}
