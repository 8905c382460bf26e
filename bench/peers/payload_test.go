package main

import (
	"encoding/json"
	"testing"

	"github.com/queuey/queuey/bench/e2e"
)

// River stores its args as JSON: that encoding is the payload every other
// peer carries, byte for byte in size.
func TestRiverArgsArePayloadSize(t *testing.T) {
	b, err := json.Marshal(newRiverArgs())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != e2e.PayloadSize {
		t.Fatalf("river args are %d bytes of JSON, want %d", len(b), e2e.PayloadSize)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 12345.6: "12,346", 1234567: "1,234,567"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0.3: 0.5, 1: 1, 1.2: 2, 483: 500, 2415: 5000, 7000: 10000} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
