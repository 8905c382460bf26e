package rabbitmq

import (
	"testing"
	"time"
)

// TestRecheckDelayBoundsMarkerReads: a backend watching n queues reads at
// most pauseRechecksPerSecond markers a second without a notice, however
// large n is, and a few thousand queues are read every PauseRecheck or a
// little more.
func TestRecheckDelayBoundsMarkerReads(t *testing.T) {
	for _, n := range []int{0, 1, 50, 100, 101, 2100, 20000} {
		least := max(PauseRecheck, time.Duration(n)*time.Second/pauseRechecksPerSecond)
		for range 1000 {
			d := recheckDelay(n)
			if d < least || d > least+least/2 {
				t.Fatalf("recheckDelay(%d) = %v, want %v to %v", n, d, least, least+least/2)
			}
			if rate := float64(n) / d.Seconds(); rate > pauseRechecksPerSecond {
				t.Fatalf("recheckDelay(%d) = %v: %.1f reads a second, want at most %d", n, d, rate, pauseRechecksPerSecond)
			}
		}
	}
	if d := recheckDelay(20000); d < 40*time.Second {
		t.Errorf("recheckDelay(20000) = %v, want 40s or more", d)
	}
}
