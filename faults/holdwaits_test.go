package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// runWaits runs a worker over q on b with handler h until the test ends.
func runWaits(t *testing.T, b runtime.Backend, q runtime.QueueConfig, h func(context.Context, job) error) {
	t.Helper()
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, h)
	brokertest.Run(t, w)
}

// TestSlowLinkWaits: through a link that delays every byte by 800 ms each
// way, so that a publish reaches the broker long after the declare before
// it was answered, no wait is lost: every job enqueued with a delay of 1 s
// runs, and every job whose first run failed (a retry of 1 s) runs again.
func TestSlowLinkWaits(t *testing.T) {
	brokerURL := gate(t)
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startSlowProxy(t, u.Host, 800*time.Millisecond)
	slow := *u
	slow.Host = proxy.l.Addr().String()
	q := testQueue(t, brokerURL)
	q.RetryBase, q.MaxAttempts = time.Second, 3
	b, p := producer(t, slow.String(), q)

	const delayed, failing = 6, 5
	var mu sync.Mutex
	runs := map[int][]int{} // job N -> attempts it ran at
	ran := make(chan struct{}, 100)
	runWaits(t, b, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		runs[j.N] = append(runs[j.N], info.Attempt)
		mu.Unlock()
		ran <- struct{}{}
		if j.N >= delayed && info.Attempt == 1 {
			return errors.New("first run fails: retried in 1s")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	for n := range delayed + failing {
		wg.Go(func() {
			var opts []runtime.EnqueueOption
			if n < delayed {
				opts = append(opts, runtime.WithDelay(time.Second))
			}
			if _, err := runtime.Enqueue(ctx, p, q, job{N: n}, opts...); err != nil {
				t.Errorf("enqueue %d: %v", n, err)
			}
		})
	}
	wg.Wait()
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for n := range delayed + failing {
			want := 1
			if n >= delayed {
				want = 2
			}
			if len(runs[n]) < want {
				return false
			}
		}
		return true
	}
	deadline := time.After(wait)
	for !done() {
		select {
		case <-ran:
		case <-deadline:
			mu.Lock()
			t.Fatalf("within %v through the slow link, runs by job (attempts) %v; want jobs 0..%d once and %d..%d twice", wait, runs, delayed-1, delayed, delayed+failing-1)
		}
	}
	fmt.Printf("slow link: %d delayed jobs and %d retried jobs all ran through 800ms each way\n", delayed, failing)
}

// TestFineGranularityWaits: with a granularity of 1 ms, thousands of jobs
// each enqueued with a delay of a few milliseconds, and deferred once by a
// few more, all run, none before its delay.
func TestFineGranularityWaits(t *testing.T) {
	brokerURL := gate(t)
	q := testQueue(t, brokerURL)
	q.Prefetch, q.Concurrency = 100, 20
	b := dial(t, brokerURL, rabbitmq.Options{Granularity: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	const n, producers = 3000, 10
	delays := make([]time.Duration, n)
	for i := range delays {
		delays[i] = time.Duration(1+rand.IntN(9)) * time.Millisecond
	}
	var mu sync.Mutex
	deferred := make([]bool, n)
	handled := map[int]int{}
	var early []string
	progress := make(chan struct{}, 1)
	runWaits(t, b, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		waited := time.Since(info.EnqueuedAt)
		mu.Lock()
		defer mu.Unlock()
		if !deferred[j.N] {
			if waited < delays[j.N]-brokertest.ClockSlack(delays[j.N]) {
				early = append(early, fmt.Sprintf("job %d ran %v after its enqueue, delay %v", j.N, waited, delays[j.N]))
			}
			deferred[j.N] = true
			return runtime.Defer(delays[j.N])
		}
		handled[j.N]++
		select {
		case progress <- struct{}{}:
		default:
		}
		return nil
	})
	confirmed := make([]bool, n)
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for i := w; i < n; i += producers {
				if _, err := runtime.Enqueue(ctx, p, q, job{N: i}, runtime.WithDelay(delays[i])); err != nil {
					t.Errorf("enqueue %d: %v", i, err)
					continue
				}
				confirmed[i] = true
			}
		})
	}
	wg.Wait()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}
	deadline := time.After(wait)
	want := 0
	for _, c := range confirmed {
		if c {
			want++
		}
	}
	for count() < want {
		select {
		case <-progress:
		case <-deadline:
			mu.Lock()
			missing := []int{}
			for i := range n {
				if confirmed[i] && handled[i] == 0 {
					missing = append(missing, i)
				}
			}
			mu.Unlock()
			t.Fatalf("%d of %d confirmed jobs lost at granularity 1ms (never handled within %v), e.g. %v", len(missing), want, wait, missing[:min(len(missing), 10)])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Errorf("%d jobs ran before their delay: %v", len(early), early[:min(len(early), 5)])
	}
	fmt.Printf("granularity 1ms: %d jobs with delays of 1-9ms, each deferred once by as much, all handled\n", n)
}
