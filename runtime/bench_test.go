package runtime_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/queuey/queuey/runtime"
)

type benchJob struct {
	To      string
	Subject string
	N       int
}

// BenchmarkMemoryEndToEnd measures jobs/s and allocations per job through
// the typed path (Enqueue, then a no-op Handle) on the memory backend, with
// the producer and the worker running at once.
func BenchmarkMemoryEndToEnd(b *testing.B) {
	for _, prefetch := range []int{1, 50} {
		b.Run("prefetch="+strconv.Itoa(prefetch), func(b *testing.B) {
			be := quietMemory()
			defer be.Close()
			q := runtime.QueueConfig{Name: "bench", Kind: runtime.KindOf[benchJob](), Prefetch: prefetch}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := runtime.NewProducer(ctx, be, q)
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			wg.Add(b.N)
			w := runtime.NewWorker(be)
			runtime.Handle(w, q, func(ctx context.Context, j benchJob) error { wg.Done(); return nil })
			errc := make(chan error, 1)
			go func() { errc <- w.Run(ctx) }()
			job := benchJob{To: "a@example.com", Subject: "hello", N: 1}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := runtime.Enqueue(ctx, p, q, job); err != nil {
					b.Fatal(err)
				}
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			cancel()
			<-errc
		})
	}
}

// BenchmarkMemoryEnqueue measures publish-only jobs/s on the memory backend.
func BenchmarkMemoryEnqueue(b *testing.B) {
	be := quietMemory()
	defer be.Close()
	q := runtime.QueueConfig{Name: "bench", Kind: runtime.KindOf[benchJob]()}
	ctx := context.Background()
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	job := benchJob{To: "a@example.com", Subject: "hello", N: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runtime.Enqueue(ctx, p, q, job); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
