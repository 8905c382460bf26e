package e2e

import (
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// PayloadSize is the size in bytes of every job's encoded payload.
const PayloadSize = 200

// Job is the job every run carries: its msgpack encoding is PayloadSize
// bytes (a one-key map, "Body", and a string of bodyLen bytes).
type Job struct {
	Body string
}

// bodyLen is Body's length: PayloadSize less the map header (1 byte), the
// key (1 + 4) and the str8 header (2).
const bodyLen = PayloadSize - 8

// NewJob returns the job every run enqueues.
func NewJob() Job { return Job{Body: strings.Repeat("x", bodyLen)} }

// Payload returns NewJob's msgpack encoding: what the plain loop sends for
// each job, and the payload of the peers that take one.
func Payload() []byte {
	b, err := msgpack.Marshal(new(NewJob()))
	if err != nil {
		panic(err) // a string field always encodes
	}
	return b
}
