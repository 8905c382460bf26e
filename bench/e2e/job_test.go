package e2e

import "testing"

func TestPayloadIsPayloadSize(t *testing.T) {
	if n := len(Payload()); n != PayloadSize {
		t.Fatalf("payload is %d bytes, want %d", n, PayloadSize)
	}
}
