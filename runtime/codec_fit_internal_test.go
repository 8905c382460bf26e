package runtime

import (
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
)

type fitLevel int8

// fitClamp decodes itself, clamping what it reads into an int8.
type fitClamp int8

func (c *fitClamp) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeInt64()
	*c = fitClamp(max(math.MinInt8, min(math.MaxInt8, n)))
	return err
}

func (c fitClamp) EncodeMsgpack(e *msgpack.Encoder) error { return e.EncodeInt(int64(c)) }

type fitLine struct {
	SKU string
	Qty int8
}

type fitBase struct{ Shard uint8 }

type fitPair struct {
	//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
	_msgpack struct{} `msgpack:",as_array"`
	Left     int8
	Right    int8
}

type fitJob struct {
	fitBase
	Level   int8
	Port    uint16
	Sev     fitLevel
	Big     int64
	N       int
	Count   uint64
	Wide    uint32
	Short   int16
	Ratio   float32
	Total   float64
	Tagged  int8 `msgpack:"t"`
	Ptr     *int8
	Lines   []fitLine
	Ptrs    []*fitLine
	Pair    [2]int8
	Counts  map[string]int8
	ByLevel map[int8]string
	Nested  map[string][]fitLine
	Span    fitPair
	Clamp   fitClamp
	Any     any
	Name    string
	Bytes   []byte
}

// TestDecodePayloadRefusesNumbersThatDoNotFit: a number that msgpack would
// decode into its field changed (wrapped around, its sign lost, rounded)
// is a decode error naming the field, the number and the field's type,
// wherever the field is: nested in structs, slices, maps, pointers and
// embedded structs, and as a map key.
func TestDecodePayloadRefusesNumbersThatDoNotFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		payload any
		want    string
	}{
		{"int8 above", map[string]any{"Level": 300}, `field "Level" (msgpack key "Level"): want int8, found int 300, out of its range`},
		{"int8 below", map[string]any{"Level": -129}, `field "Level" (msgpack key "Level"): want int8, found int -129, out of its range`},
		{"uint16 negative", map[string]any{"Port": -1}, `field "Port" (msgpack key "Port"): want uint16, found int -1, out of its range`},
		{"uint16 above", map[string]any{"Port": 65536}, `field "Port" (msgpack key "Port"): want uint16, found int 65536, out of its range`},
		{"named int8", map[string]any{"Sev": 300}, `field "Sev" (msgpack key "Sev"): want runtime.fitLevel (int8), found int 300, out of its range`},
		{"int64 from a big uint64", map[string]any{"Big": uint64(math.MaxUint64)}, `field "Big" (msgpack key "Big"): want int64, found uint 18446744073709551615, out of its range`},
		{"int from a big uint64", map[string]any{"N": uint64(1 << 63)}, `field "N" (msgpack key "N"): want int, found uint 9223372036854775808, out of its range`},
		{"uint64 negative", map[string]any{"Count": -1}, `field "Count" (msgpack key "Count"): want uint64, found int -1, out of its range`},
		{"uint32 above", map[string]any{"Wide": int64(1 << 32)}, `field "Wide" (msgpack key "Wide"): want uint32, found int 4294967296, out of its range`},
		{"int16 below", map[string]any{"Short": -40000}, `field "Short" (msgpack key "Short"): want int16, found int -40000, out of its range`},
		{"float32 from an inexact int", map[string]any{"Ratio": 1<<24 + 1}, `field "Ratio" (msgpack key "Ratio"): want float32, found int 16777217, which it cannot hold exactly`},
		{"float64 from an inexact int", map[string]any{"Total": int64(1<<53 + 1)}, `field "Total" (msgpack key "Total"): want float64, found int 9007199254740993, which it cannot hold exactly`},
		{"float64 from a big uint64", map[string]any{"Total": uint64(math.MaxUint64)}, `field "Total" (msgpack key "Total"): want float64, found uint 18446744073709551615, which it cannot hold exactly`},
		{"int from a float", map[string]any{"N": 2.5}, `field "N" (msgpack key "N"): want int, found float64 2.5`},
		{"tagged field", map[string]any{"t": 300}, `field "Tagged" (msgpack key "t"): want int8, found int 300, out of its range`},
		{"pointer", map[string]any{"Ptr": 300}, `field "Ptr" (msgpack key "Ptr"): want int8, found int 300, out of its range`},
		{"slice of structs", map[string]any{"Lines": []any{map[string]any{"Qty": 1}, map[string]any{"SKU": "b", "Qty": 300}}}, `field "Lines[1].Qty" (msgpack key "Lines[1].Qty"): want int8, found int 300, out of its range`},
		{"slice of pointers", map[string]any{"Ptrs": []any{nil, map[string]any{"Qty": -200}}}, `field "Ptrs[1].Qty" (msgpack key "Ptrs[1].Qty"): want int8, found int -200, out of its range`},
		{"struct as an array", map[string]any{"Lines": []any{[]any{"a", 300}}}, `field "Lines[0].Qty" (msgpack key "Lines[0][1]"): want int8, found int 300, out of its range`},
		{"array", map[string]any{"Pair": []any{1, 128}}, `field "Pair[1]" (msgpack key "Pair[1]"): want int8, found int 128, out of its range`},
		{"map value", map[string]any{"Counts": map[string]any{"a": 1, "b": 300}}, `field "Counts[\"b\"]" (msgpack key "Counts[\"b\"]"): want int8, found int 300, out of its range`},
		{"map key", map[string]any{"ByLevel": map[int]string{300: "x"}}, `field "ByLevel[key]" (msgpack key "ByLevel[key]"): want int8, found int 300, out of its range`},
		{"map of slices", map[string]any{"Nested": map[string]any{"wh": []any{map[string]any{"Qty": 999}}}}, `field "Nested[\"wh\"][0].Qty" (msgpack key "Nested[\"wh\"][0].Qty"): want int8, found int 999, out of its range`},
		{"embedded struct", map[string]any{"Shard": 256}, `field "fitBase.Shard" (msgpack key "Shard"): want uint8, found int 256, out of its range`},
		{"as_array struct", map[string]any{"Span": []any{1, 200}}, `field "Span.Right" (msgpack key "Span[1]"): want int8, found int 200, out of its range`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := msgpack.Marshal(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			var j fitJob
			err = decodePayload(data, &j, mpfit.For(reflect.TypeFor[fitJob]()))
			if err == nil {
				t.Fatalf("decoded into %+v, want error %q", j, tc.want)
			}
			if err.Error() != tc.want {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// TestDecodePayloadKeepsNumbersThatFit: numbers at the edges of their
// fields decode, as do values left to their type's own decoder or to an
// interface, and nils.
func TestDecodePayloadKeepsNumbersThatFit(t *testing.T) {
	t.Parallel()
	data, err := msgpack.Marshal(map[string]any{
		"Level": -128, "Port": 65535, "Sev": 127, "Big": int64(math.MinInt64), "N": int64(math.MaxInt64),
		"Count": uint64(math.MaxUint64), "Wide": uint32(math.MaxUint32), "Short": math.MaxInt16,
		"Ratio": 1 << 24, "Total": int64(1 << 53), "Ptr": nil, "Pair": []any{-128, 127},
		"Counts": map[string]any{"a": nil}, "ByLevel": map[int]string{-128: "low"}, "Shard": 255,
		"Span": []any{1, 2}, "Clamp": 300, "Any": uint64(math.MaxUint64), "Name": "n", "Bytes": []byte{1},
		"Lines": []any{map[string]any{"Qty": 127, "Unknown": 1 << 40}}, "Ptrs": []any{nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	var j fitJob
	if err := decodePayload(data, &j, mpfit.For(reflect.TypeFor[fitJob]())); err != nil {
		t.Fatal(err)
	}
	if j.Level != -128 || j.Port != 65535 || j.Count != math.MaxUint64 || j.Ratio != 1<<24 || j.Clamp != 127 || j.Shard != 255 || j.Span.Right != 2 {
		t.Errorf("decoded %+v", j)
	}
}
