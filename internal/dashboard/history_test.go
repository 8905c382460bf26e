package dashboard

import (
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// waitSamples waits, at most 15 s, until the server has sampled n times
// on its own, and returns the samples.
func waitSamples(t *testing.T, s *Server, n int) []sample {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		next := s.hist.wait()
		s.hist.mu.Lock()
		got := len(s.hist.samples)
		samples := append([]sample(nil), s.hist.samples...)
		s.hist.mu.Unlock()
		if got >= n {
			return samples
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("%d samples after 15 s, want %d", got, n)
		}
	}
}

// TestSampledWithNoPageOpen: the server samples from New on, so the
// history holds what happened while no page asked.
func TestSampledWithNoPageOpen(t *testing.T) {
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a"}, job{To: "b"})
	samples := waitSamples(t, f.srv, 2)
	last := samples[len(samples)-1]
	if last.Dead != 2 || last.queues[testQueue].Dead != 2 {
		t.Errorf("latest sample %+v, want 2 dead in all and in %s", last, testQueue)
	}
	if got := of(samples, testQueue); len(got) != len(samples) {
		t.Errorf("%d samples of %s, want %d", len(got), testQueue, len(samples))
	}
}

// TestRatesFromCounters: rates are the difference of two readings of the
// counters over the time between them, and none when a counter went back.
func TestRatesFromCounters(t *testing.T) {
	prev := &snapshot{counts: map[string]MessageCounts{"q": {Published: 100, Handled: 40}}}
	now := map[string]MessageCounts{"q": {Published: 120, Handled: 50}}
	r, ok := measure(prev, 2*time.Second, now, "q")
	if !ok || r.Published != 10 || r.Handled != 5 {
		t.Errorf("measure = %+v, %v; want 10 and 5 jobs/s", r, ok)
	}
	if _, ok := measure(prev, 2*time.Second, map[string]MessageCounts{"q": {Published: 3}}, "q"); ok {
		t.Error("measure gave rates across a reset counter")
	}
	if _, ok := measure(nil, 0, now, "q"); ok {
		t.Error("measure gave rates from one reading")
	}
}

// TestSamplerStopsOnClose: Close ends the sampling goroutine (goleak checks
// the rest) and may be called twice.
func TestSamplerStopsOnClose(t *testing.T) {
	b := runtime.NewMemoryBackend()
	defer b.Close()
	s, err := New(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
}

// TestRatesOverWindow: rates are measured over at least rateWindow once
// the history is that long, which evens out counters the management API
// updates in steps.
func TestRatesOverWindow(t *testing.T) {
	clock := time.Unix(0, 0)
	h := newHistory(historyLength, func() time.Time { return clock }, nil)
	published := []uint64{0, 0, 0, 50, 50, 50, 100, 100}
	for _, p := range published {
		h.record(snapshot{Queues: []queueRow{{QueueStats: admin.QueueStats{Queue: "q"}}}, counts: map[string]MessageCounts{"q": {Published: p}}})
		clock = clock.Add(sampleEvery)
	}
	last := h.samples[len(h.samples)-1]
	// The last reading (100 at 14 s) against the one 10 s before (0 at 4 s).
	if want := 10.0; last.Published != want {
		t.Errorf("latest rate %v, want %v jobs/s over the window", last.Published, want)
	}
	if len(h.readings) > int(rateWindow/sampleEvery)+1 {
		t.Errorf("%d readings kept, want at most %d", len(h.readings), rateWindow/sampleEvery+1)
	}
}
