package codec

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestDecodeAllocatesInProportionToWhatTheBodyHolds: a headers map that
// claims as many entries as its bytes allow, all with one empty name,
// holds one header; decoding it must not allocate for the millions it
// claims. Left to the claim, a body of 2 MB costs about 80 MB, and one of
// the 128 MB a 3.x broker accepts about 5 GB.
func TestDecodeAllocatesInProportionToWhatTheBodyHolds(t *testing.T) {
	const n = 1 << 20
	b := []byte{0x97, 1, 1, 0, 0, 0xa1, 'q', 0xa0, 0xdf}
	b = binary.BigEndian.AppendUint32(b, n)
	b = append(b, bytes.Repeat([]byte{0xa0}, 2*n)...)
	d := &amqp.Delivery{ContentType: ContentType, MessageId: "id", Body: b}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	env, err := Decode(d)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Headers) != 1 {
		t.Fatalf("decoded %d headers, want 1", len(env.Headers))
	}
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*len(b)+1<<20); got > limit {
		t.Errorf("decoding a %d-byte body that holds one header allocated %d MB, want at most %d MB", len(b), got>>20, limit>>20)
	}
}
