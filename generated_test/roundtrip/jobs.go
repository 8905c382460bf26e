// Package roundtrip holds a job with a field of every kind msgpack carries,
// for tests that enqueue it and handle it through generated code.
package roundtrip

import (
	"time"

	"github.com/queuey/queuey/generated_test/roundtrip/other"
)

//go:generate go tool queuey-gen

// Meta is embedded in Everything by value: msgpack inlines its fields.
type Meta struct {
	TraceID string
}

// Extra is embedded in Everything by pointer.
type Extra struct {
	Note string
}

// Line is a struct held in a slice.
type Line struct {
	SKU   string
	Count int
}

// Everything has a field of every kind a job may hold.
//
//queuey:queue prefetch=4 max_attempts=1
type Everything struct {
	Meta
	*Extra

	ID string

	Bool    bool
	Int     int
	Int8    int8
	Int16   int16
	Int32   int32
	Int64   int64
	Uint    uint
	Uint8   uint8
	Uint16  uint16
	Uint32  uint32
	Uint64  uint64
	Float32 float32
	Float64 float64
	Rune    rune
	String  string

	Bytes    []byte
	Time     time.Time
	Duration time.Duration

	Ptr       *int
	PtrString *string
	PtrStruct *other.Address

	Strings  []string
	Lines    []Line
	Array    [3]int
	Map      map[string]int
	IntKeys  map[int]string
	Nested   map[string][]other.Address
	Address  other.Address
	Level    other.Level
	Children []*Everything

	Renamed   string `msgpack:"renamed_field"`
	OmitEmpty string `msgpack:",omitempty"`
	Skipped   string `msgpack:"-"`

	unexported string `msgpack:"-"`
}

// Bare has a directive without keys: its queue has every default.
//
//queuey:queue
type Bare struct{ N int }

// FIFO declares no priority.
//
//queuey:queue max_priority=0
type FIFO struct{ N int }

// Customer is a named string type: a limit key may be one.
type Customer string

// Limited has every global limit: at most 2 running, 50 starts a second,
// one at a time per Customer.
//
//queuey:queue limit=2 rate=50/s limit_key=Customer
type Limited struct {
	Customer Customer
	N        int
}
