package dashboard

import (
	"testing"
	"time"

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
