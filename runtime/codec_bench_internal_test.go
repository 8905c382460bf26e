package runtime

import (
	"reflect"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
)

// decodeBenchJob is a job with the usual mix of field types: strings,
// integers of several widths, a float, a slice, a nested struct and a time.
type decodeBenchJob struct {
	To       string
	Subject  string
	N        int
	Priority int8
	Port     uint16
	Score    float64
	Tags     []string
	Lines    []decodeBenchLine
	At       time.Time
}

type decodeBenchLine struct {
	SKU string
	Qty int32
}

// BenchmarkDecodePayload measures decodePayload alone: the work a worker
// does on each job before its handler runs.
func BenchmarkDecodePayload(b *testing.B) {
	payload, err := encodePayload(&decodeBenchJob{
		To: "a@example.com", Subject: "hello", N: 1, Priority: 3, Port: 8080, Score: 0.5,
		Tags:  []string{"a", "b"},
		Lines: []decodeBenchLine{{"x-1", 2}, {"y-2", 5}},
		At:    time.Unix(1700000000, 0),
	})
	if err != nil {
		b.Fatal(err)
	}
	fit := mpfit.For(reflect.TypeFor[decodeBenchJob]())
	b.ReportAllocs()
	for b.Loop() {
		var j decodeBenchJob
		if err := decodePayload(payload, &j, fit); err != nil {
			b.Fatal(err)
		}
	}
}
