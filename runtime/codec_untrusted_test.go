package runtime

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

// TestDecodePayloadRefusesCraftedPayloads: a payload nested millions deep
// is refused without recursing (the decoder's recursion would overflow
// the stack, a fatal error), and one that claims a string of 64 MB in a
// dozen bytes is refused without growing a decoder's buffer towards the
// claim, however often it comes.
func TestDecodePayloadRefusesCraftedPayloads(t *testing.T) {
	t.Parallel()
	var v struct{ A any }
	fit := mpfit.For(reflect.TypeOf(v))
	deep := append([]byte{0x81, 0xa1, 'A'}, bytes.Repeat([]byte{0x91}, 12<<20)...)
	if err := decodePayload(deep, &v, fit); !errors.Is(err, mpscan.ErrMalformed) {
		t.Fatalf("decodePayload of a payload nested 12M deep = %v, want ErrMalformed", err)
	}
	claim := []byte{0x81, 0xa1, 'A', 0xdb, 0x04, 0, 0, 0, 'x'}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 50 {
		if err := decodePayload(claim, &v, fit); !errors.Is(err, mpscan.ErrMalformed) {
			t.Fatalf("decodePayload of a claimed 64 MB string = %v, want ErrMalformed", err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("50 decodes of a %d-byte payload allocated %d KB", len(claim), got>>10)
	}
}

// craftedTree is a job type whose numbers the payload check walks into,
// as deep as a payload nests it.
type craftedTree struct {
	N    int8
	Kids []craftedTree
}

// TestDecodePayloadRefusesCraftedPayloadsItWalks: a payload nested a
// million deep along a recursive job type, whose numbers are checked on
// the way, is refused too, at the same depth as any other.
func TestDecodePayloadRefusesCraftedPayloadsItWalks(t *testing.T) {
	t.Parallel()
	fit := mpfit.For(reflect.TypeFor[craftedTree]())
	level := []byte{0x81, 0xa4, 'K', 'i', 'd', 's', 0x91} // {"Kids": [ ...
	var v craftedTree
	deep := append(bytes.Repeat(level, 1<<20), 0x80)
	if err := decodePayload(deep, &v, fit); !errors.Is(err, mpscan.ErrMalformed) {
		t.Fatalf("decodePayload of a tree nested 1M deep = %v, want ErrMalformed", err)
	}
	// As deep as any payload may nest, it decodes.
	fits := append(bytes.Repeat(level, mpscan.MaxDepth/2), 0x80)
	if err := decodePayload(fits, &v, fit); err != nil {
		t.Fatalf("decodePayload of a tree nested %d deep = %v", mpscan.MaxDepth, err)
	}
}
