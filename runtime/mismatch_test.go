package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// mismatching refuses its first declares with ErrQueueMismatch, as a
// broker whose queue has other arguments does until it is migrated.
type mismatching struct {
	*runtime.MemoryBackend
	refuse   int32
	declares atomic.Int32
}

func (m *mismatching) Declare(ctx context.Context, q runtime.QueueConfig) error {
	if m.declares.Add(1) <= m.refuse {
		return fmt.Errorf("%w: queue %q exists with x-max-priority=3", runtime.ErrQueueMismatch, q.Name)
	}
	return m.MemoryBackend.Declare(ctx, q)
}

type mismatchJob struct{ N int }

// TestWorkerDeclaresAgainAfterMismatch: a worker whose queue is refused
// as declared otherwise declares it again after a wait instead of
// returning at once (a supervisor would run it again and again), and runs
// once the declare is taken; past its retries it returns the refusal.
func TestWorkerDeclaresAgainAfterMismatch(t *testing.T) {
	runtime.SetMismatchRetries(t, []time.Duration{time.Millisecond, time.Millisecond})
	q := runtime.DefaultQueueConfig("mismatch")
	q.Kind = runtime.KindOf[mismatchJob]()

	b := &mismatching{MemoryBackend: runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler))), refuse: 2}
	w := runtime.NewWorker(b)
	got := make(chan int, 1)
	runtime.Handle(w, q, func(_ context.Context, j mismatchJob) error { got <- j.N; return nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	p, err := runtime.NewProducer(ctx, b.MemoryBackend, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, q, mismatchJob{N: 7}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-got:
		if n != 7 {
			t.Errorf("handled %d, want 7", n)
		}
	case err := <-done:
		t.Fatalf("Run returned %v before handling the job", err)
	case <-ctx.Done():
		t.Fatal("no job handled")
	}
	if n := b.declares.Load(); n != 3 {
		t.Errorf("declares = %d, want 3 (two refused, one taken)", n)
	}
	_ = w.Stop(ctx)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}

	b = &mismatching{MemoryBackend: runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler))), refuse: 100}
	w = runtime.NewWorker(b)
	runtime.Handle(w, q, func(context.Context, mismatchJob) error { return nil })
	if err := w.Run(ctx); !errors.Is(err, runtime.ErrQueueMismatch) || b.declares.Load() != 3 {
		t.Errorf("Run with the queue refused each time = %v after %d declares; want ErrQueueMismatch after 3", err, b.declares.Load())
	}
}
