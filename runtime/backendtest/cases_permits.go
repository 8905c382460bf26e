package backendtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// Global limits (QueueConfig.Limit, Rate, LimitKey) across several
// workers over one backend. RabbitMQ's own tests hold them across
// processes too.

// limitedHarness is newHarness for a case of global limits; it skips the
// test when the backend holds none.
func limitedHarness(t *testing.T, f Features, nb func(*testing.T) runtime.Backend, mod func(q *runtime.QueueConfig)) *harness {
	t.Helper()
	h := newHarness(t, f, nb, mod)
	if _, ok := h.b.(runtime.Limiter); !ok {
		t.Skip("backend does not implement runtime.Limiter")
	}
	return h
}

// peakGauge counts what runs at once, by key, and opens full once the
// total passes a target: the limit, which a correct backend never lets
// it pass.
type peakGauge struct {
	mu      sync.Mutex
	running map[string]int
	peak    map[string]int
	total   int
	top     int
	target  int
	full    chan struct{}
}

// gaugeHold is how long peakGauge holds each run.
const gaugeHold = 300 * time.Millisecond

func newPeakGauge(target int) *peakGauge {
	return &peakGauge{running: map[string]int{}, peak: map[string]int{}, target: target, full: make(chan struct{})}
}

// enter records a run of key and holds it until more than target run at
// once, or for gaugeHold, so that runs overlap whatever the scheduling and
// a backend that lets more than target run is caught.
func (g *peakGauge) enter(key string) {
	g.mu.Lock()
	g.running[key]++
	g.peak[key] = max(g.peak[key], g.running[key])
	g.total++
	g.top = max(g.top, g.total)
	if g.total > g.target {
		select {
		case <-g.full:
		default:
			close(g.full)
		}
	}
	g.mu.Unlock()
	select {
	case <-g.full:
	case <-time.After(gaugeHold):
	}
}

func (g *peakGauge) leave(key string) {
	g.mu.Lock()
	g.running[key]--
	g.total--
	g.mu.Unlock()
}

// testGlobalLimit: with Limit 3 and three workers each free to run 5 at
// once, exactly 3 run at once, and every job runs.
func testGlobalLimit(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const limit, n = 3, 18
	h := limitedHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.Limit = 5, 5, limit })
	g := newPeakGauge(limit)
	done := make(chan int, n)
	for range 3 {
		h.start(func(ctx context.Context, j job) error {
			g.enter("")
			defer g.leave("")
			done <- j.N
			return nil
		})
	}
	for i := range n {
		h.enqueue(job{N: i})
	}
	for range n {
		recv(t, done, "a job")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.top != limit {
		t.Fatalf("peak of runs at once across 3 workers = %d, want exactly Limit %d", g.top, limit)
	}
}

// testLimitKey: with LimitKey, jobs of one key never run at once while
// jobs of different keys do.
func testLimitKey(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const keys, per = 4, 3
	h := limitedHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.LimitKey = 6, 6, "Text" })
	g := newPeakGauge(keys) // one per key at most
	done := make(chan int, keys*per)
	for range 2 {
		h.start(func(ctx context.Context, j job) error {
			g.enter(j.Text)
			defer g.leave(j.Text)
			done <- j.N
			return nil
		})
	}
	for i := range keys * per {
		h.enqueue(job{N: i, Text: string(rune('a' + i%keys))})
	}
	for range keys * per {
		recv(t, done, "a job")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, p := range g.peak {
		if p != 1 {
			t.Errorf("key %q: %d jobs ran at once, want 1", k, p)
		}
	}
	if g.top < 2 {
		t.Errorf("jobs of different keys: at most %d ran at once, want at least 2", g.top)
	}
}

// testRateLimit: with Rate 5/s, 12 jobs take at least two periods, and
// no window of a period holds more than 5 starts by the handlers' own
// clock (6 where a backend's spend, made as the run begins, reaches its
// clock before the handler reads the time).
func testRateLimit(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const n = 12
	rate := runtime.Rate{N: 5, Per: time.Second}
	h := limitedHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.Rate = 10, 10, rate })
	var mu sync.Mutex
	var starts []time.Time
	done := make(chan int, n)
	for range 2 {
		h.start(func(ctx context.Context, j job) error {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			done <- j.N
			return nil
		})
	}
	for i := range n {
		h.enqueue(job{N: i})
	}
	for range n {
		recv(t, done, "a job")
	}
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range starts {
		in := 0
		for _, s := range starts[i:] {
			if s.Sub(starts[i]) < rate.Per {
				in++
			}
		}
		if in > rate.N+1 {
			t.Errorf("%d starts within %v of the start at +%v, want at most %d (+1)", in, rate.Per, starts[i].Sub(starts[0]), rate.N)
		}
	}
	if span := starts[n-1].Sub(starts[0]); span < 2*rate.Per-100*time.Millisecond {
		t.Errorf("%d starts at %v took %v, want at least two periods", n, rate, span)
	}
}

// testLimitWaitBurnsNoAttempt: a job that waits for a permit and whose
// worker stops meanwhile goes back unrun: it runs later at attempt 1.
func testLimitWaitBurnsNoAttempt(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := limitedHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.Limit = 2, 2, 1 })
	started := make(chan run, 10)
	hold := make(chan struct{})
	handler := func(ctx context.Context, j job) error {
		started <- runOf(ctx, j)
		if j.N == 0 {
			<-hold
		}
		return nil
	}
	w := runtime.NewWorker(h.b)
	runtime.Handle(w, h.q, handler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	h.enqueue(job{N: 0})
	if r := recv(t, started, "the job that holds the permit"); r.N != 0 {
		t.Fatalf("first run is job %d, want 0", r.N)
	}
	h.enqueue(job{N: 1}) // waits for the permit job 0 holds
	waitFor(t, "job 1 waiting for the permit", func() bool {
		st := limitStates(t, h)
		return st == nil || st.Waiting == 1
	})
	cancel()    // the worker stops: job 1's wait ends
	close(hold) // then job 0 gives its permit back
	if err := recv(t, stopped, "the worker's stop"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case r := <-started:
		t.Fatalf("job %d ran on the stopping worker (attempt %d); it should have gone back unrun", r.N, r.Attempt)
	default:
	}
	h.start(handler)
	r := recv(t, started, "the job that waited")
	if r.N != 1 || r.Attempt != 1 {
		t.Fatalf("after the stop: job %d at attempt %d, want job 1 at attempt 1", r.N, r.Attempt)
	}
}

// limitStates reads the state of h's queue's limits, nil when the
// backend cannot read them (no admin.LimitReader, or a RabbitMQ backend
// without its management API).
func limitStates(t *testing.T, h *harness) *runtime.LimitState {
	t.Helper()
	r, ok := h.b.(admin.LimitReader)
	if !ok {
		return nil
	}
	st, err := r.LimitStates(ctxT(t), []runtime.QueueConfig{h.q})
	if errors.Is(err, admin.ErrCannotList) {
		return nil
	}
	if err != nil || len(st) != 1 {
		t.Fatalf("LimitStates = %v, %v; want one state", st, err)
	}
	return &st[0]
}

// waitFor waits, bounded, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
