package e2e

import (
	"testing"
	"time"
)

func TestPayloadIsPayloadSize(t *testing.T) {
	if n := len(Payload()); n != PayloadSize {
		t.Fatalf("payload is %d bytes, want %d", n, PayloadSize)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	spans := []Span{{Jobs: 10, Elapsed: time.Second}, {Jobs: 30, Elapsed: time.Second}}
	if got := MedianOf(spans, Span.Rate); got != 20 {
		t.Errorf("MedianOf rates = %v, want 20", got)
	}
}
