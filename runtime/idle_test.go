package runtime_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/runtime"
)

// TestIdleQueuesHoldNoHandlerGoroutines runs a worker of 200 queues with a
// concurrency of 10 each, lets every queue run one job, and counts the
// goroutines once they are idle again: handler goroutines start on demand,
// so an idle queue costs a few goroutines (its runner, its pause watch),
// not one per concurrency slot.
func TestIdleQueuesHoldNoHandlerGoroutines(t *testing.T) {
	const (
		queues      = 200
		concurrency = 10
		// An idle queue holds its runner, the reader of its pause state
		// and the memory backend's watch of it: 3. A goroutine per
		// concurrency slot would be 10 more.
		perQueue = 4
	)
	b := quietMemory()
	defer b.Close()
	before := goruntime.NumGoroutine()
	w := runtime.NewWorker(b)
	ran := make(chan int, queues)
	var qs []runtime.QueueConfig
	for i := range queues {
		q := runtime.DefaultQueueConfig(fmt.Sprintf("idle-%d", i))
		q.Concurrency = concurrency
		qs = append(qs, q)
		runtime.Handle(w, q, func(ctx context.Context, j ping) error {
			ran <- j.N
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	p, err := runtime.NewProducer(ctx, b, qs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		if _, err := runtime.Enqueue(ctx, p, q, ping{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for range queues {
		recvT(t, ran)
	}
	// Every queue is consuming. The handler goroutines end 250ms after
	// their jobs settle, when no other comes; wait (bounded) for the
	// count to come down.
	bound := before + queues*perQueue
	var n int
	eventually.Wait(10*time.Second, func() bool { n = goruntime.NumGoroutine(); return n <= bound })
	t.Logf("%d idle queues: %d goroutines, %.1f per queue", queues, n-before, float64(n-before)/queues)
	if n > bound {
		t.Errorf("%d idle queues hold %d goroutines (%.1f per queue), want at most %d per queue", queues, n-before, float64(n-before)/queues, perQueue)
	}
	cancel()
	if err := recvT(t, errc); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
