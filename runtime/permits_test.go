package runtime_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// plainBackend is a backend with nothing but the Backend interface: no
// Limiter.
type plainBackend struct{ runtime.Backend }

type keyed struct {
	Customer string
	Count    int
	Tags     []string
}

// TestLimitedQueueNeedsLimiter: a worker refuses to run a queue with
// global limits on a backend that cannot hold them, naming the queue and
// its limits, instead of running it unlimited.
func TestLimitedQueueNeedsLimiter(t *testing.T) {
	b := runtime.NewMemoryBackend()
	defer b.Close()
	q := runtime.DefaultQueueConfig("limits.plain")
	q.Limit, q.Rate = 3, runtime.Rate{N: 5, Per: 60e9}
	w := runtime.NewWorker(plainBackend{b})
	runtime.Handle(w, q, func(context.Context, keyed) error { return nil })
	err := w.Run(context.Background())
	if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), `queue "limits.plain" has global limits (limit=3 rate=5/m)`) {
		t.Fatalf("Run = %v, want ErrInvalidOption naming the queue and its limits", err)
	}
}

// TestLimitKeyField: a LimitKey must name an exported field of the job of
// a kind a key can be; Run says which and why.
func TestLimitKeyField(t *testing.T) {
	for key, want := range map[string]string{
		"Missing": `LimitKey "Missing": runtime_test.keyed has no exported field of that name`,
		"Tags":    `LimitKey "Tags": field runtime_test.keyed.Tags is a []string, want a string, integer or bool`,
	} {
		b := runtime.NewMemoryBackend()
		q := runtime.DefaultQueueConfig("limits.key")
		q.LimitKey = key
		w := runtime.NewWorker(b)
		runtime.Handle(w, q, func(context.Context, keyed) error { return nil })
		err := w.Run(context.Background())
		if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("LimitKey %q: Run = %v, want ErrInvalidConfig with %q", key, err, want)
		}
		b.Close()
	}
	q := runtime.DefaultQueueConfig("limits.key")
	q.LimitKey = "secret"
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "the name of an exported field") {
		t.Errorf("Validate of LimitKey %q = %v, want it refused", q.LimitKey, err)
	}
}

// TestParseRate: the annotation's forms and what is refused.
func TestParseRate(t *testing.T) {
	for s, want := range map[string]runtime.Rate{"50/s": {N: 50, Per: 1e9}, "1/m": {N: 1, Per: 60e9}, "10000/h": {N: 10000, Per: 3600e9}} {
		r, err := runtime.ParseRate(s)
		if err != nil || r != want || r.String() != s {
			t.Errorf("ParseRate(%q) = %v (%q), %v; want %v", s, r, r.String(), err, want)
		}
	}
	for _, s := range []string{"", "50", "0/s", "10001/s", "5/d", "05/s", "-1/s", "5/ s", "5/sec"} {
		if r, err := runtime.ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", s, r)
		}
	}
}

// TestPermitWaitBounded: a job that waits longer than the worker's permit
// wait goes back to its queue unrun, so that no broker's consumer timeout
// takes its delivery back counted as a run; it runs later at attempt 1.
func TestPermitWaitBounded(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))))
	defer b.Close()
	q := runtime.DefaultQueueConfig("limits.wait")
	q.Limit, q.Prefetch, q.Concurrency = 1, 2, 2
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	runs := make(chan [2]int, 10)
	w := runtime.NewWorker(b)
	w.SetPermitWait(100 * time.Millisecond)
	runtime.Handle(w, q, func(ctx context.Context, j keyed) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- [2]int{j.Count, info.Attempt}
		if j.Count == 0 {
			<-hold
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := range 2 {
		if _, err := runtime.Enqueue(context.Background(), p, q, keyed{Count: i}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if r := <-runs; r[0] != 0 {
				t.Fatalf("first run is job %d, want 0", r[0])
			}
		}
	}
	deadline := time.After(10 * time.Second)
	for !strings.Contains(func() string { mu.Lock(); defer mu.Unlock(); return logs.String() }(), "waited its longest for a permit") {
		select {
		case r := <-runs:
			t.Fatalf("job %d ran while job 0 held the only permit", r[0])
		case <-deadline:
			t.Fatal("the waiting job was never sent back")
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(hold)
	select {
	case r := <-runs:
		if r != [2]int{1, 1} {
			t.Fatalf("after job 0: job %d at attempt %d, want job 1 at attempt 1", r[0], r[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the job that waited never ran")
	}
}

// lockedWriter writes to w under mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
