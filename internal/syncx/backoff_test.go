package syncx

import (
	"context"
	"testing"
	"time"
)

func TestJitterBetweenHalfAndAll(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Second} {
		for range 100 {
			if j := Jitter(d); j < d/2 || j > d {
				t.Fatalf("Jitter(%v) = %v, want between %v and %v", d, j, d/2, d)
			}
		}
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep with a live context reported false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep with an ended context reported true")
	}
}
