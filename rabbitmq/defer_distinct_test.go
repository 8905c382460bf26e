package rabbitmq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestDistinctDeferralsComeBackNoEarlier runs 1,000 jobs that each defer
// once by a delay of their own (1 ms to 1,000 ms, at a granularity of
// 1 ms: a hold queue each, declared as the waits come): every job comes
// back, and none before its first run plus its delay.
func TestDistinctDeferralsComeBackNoEarlier(t *testing.T) {
	if testing.Short() {
		t.Skip("declares 1,000 hold queues")
	}
	const n = 1000
	b := dial(t, rabbitmq.Options{Granularity: time.Millisecond})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.Prefetch, q.Concurrency = runtime.KindOf[job](), 100, 100
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i].N = i
	}
	if _, err := runtime.EnqueueMany(ctxT(t), p, q, jobs); err != nil {
		t.Fatal(err)
	}
	delayOf := func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }
	var (
		mu    sync.Mutex
		first = map[int]time.Time{}
		early []string
		back  = make(chan int, n)
	)
	runWorker(t, b, q, func(_ context.Context, j job) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		at, again := first[j.N]
		if !again {
			first[j.N] = now
			return runtime.Defer(delayOf(j.N))
		}
		if now.Sub(at) < delayOf(j.N)-brokertest.ClockSlack(delayOf(j.N)) {
			early = append(early, fmt.Sprintf("job %d back after %v, deferred by %v", j.N, now.Sub(at), delayOf(j.N)))
		}
		back <- j.N
		return nil
	})
	seen := map[int]bool{}
	deadline := time.After(2 * time.Minute)
	for len(seen) < n {
		select {
		case i := <-back:
			seen[i] = true
		case <-deadline:
			t.Fatalf("%d of %d deferred jobs came back within 2 minutes", len(seen), n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, e := range early {
		t.Error(e)
	}
}
