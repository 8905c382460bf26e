package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestDecodeAllocatesInProportionToWhatTheBodyHolds: a headers map that
// claims as many entries as its bytes allow, all with one empty name, is
// refused (a name appears at most once); decoding it must not allocate
// for the millions it claims. Left to the claim, a body of 2 MB costs about 80 MB, and one of
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
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `header "" appears twice`) {
		t.Fatalf("Decode = %v, %v; want ErrInvalid: header \"\" appears twice", env, err)
	}
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(4*len(b)+1<<20); got > limit {
		t.Errorf("decoding a %d-byte body that claims a million headers allocated %d MB, want at most %d MB", len(b), got>>20, limit>>20)
	}
}

// TestDecodeOfAClaimedLongStringAllocatesLittle: a body of a dozen bytes
// whose queue field claims to be a string of 64 MB is invalid, and each
// decode of it must cost about what the body holds. The msgpack decoder
// keeps the buffer it grew for the claim, even on failure, and grows it
// again on the next decode that makes one (by a quarter each time, up to
// the claim), and the pooled decoders keep it between messages: a few
// dozen such messages of a dozen bytes cost a consumer 2^32 bytes held, at
// the largest claim a str32 makes (seen: 7 GB in use after 50 decodes of
// "\x97 0 0 0 0 \xdb\xdb000 0").
func TestDecodeOfAClaimedLongStringAllocatesLittle(t *testing.T) {
	body := []byte{0x97, 1, 1, 0, 0, 0xdb, 0x04, 0, 0, 0, 'q'} // queue: str32 of 64 MB, 1 byte present
	d := &amqp.Delivery{ContentType: ContentType, MessageId: "id", Body: body}
	const decodes = 50
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range decodes {
		if _, err := Decode(d); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Decode = %v, want ErrInvalid", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Errorf("%d decodes of a %d-byte body allocated %d MB, want at most 16 MB", decodes, len(body), got>>20)
	}
}
