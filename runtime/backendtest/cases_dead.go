package backendtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// testDeadLetterReasons: a permanent error and an undecodable payload are
// dead-lettered at once with their reasons; the permanent one on attempt 1.
func testDeadLetterReasons(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	permID := h.enqueue(job{N: 1})
	badID, err := h.p.EnqueuePayload(ctxT(t), h.q, []byte{0xc1}) // 0xc1 is never valid msgpack
	if err != nil {
		t.Fatalf("EnqueuePayload: %v", err)
	}
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		return runtime.Permanent(errors.New("card declined"))
	})
	dl := h.deadLetters(2)
	byID := map[string]runtime.DeadLetter{}
	for _, d := range dl {
		if d.Envelope == nil {
			t.Fatalf("dead letter without envelope: %+v", d)
		}
		byID[d.Envelope.ID] = d
	}
	perm, bad := byID[permID], byID[badID]
	wantContains(t, perm.Reason, "card declined", "permanent reason")
	if perm.Envelope == nil || perm.Envelope.Attempt != 1 {
		t.Errorf("permanent failure dead-lettered at %+v, want attempt 1", perm.Envelope)
	}
	wantContains(t, bad.Reason, "decode job payload", "undecodable payload reason")
	if r := recv(t, runs, "the permanent job's run"); r.Info.ID != permID {
		t.Errorf("handler ran job %s, want only %s (the undecodable one never reaches it)", r.Info.ID, permID)
	}
	select {
	case r := <-runs:
		t.Errorf("unexpected second run %+v", r)
	default:
	}
}

// testPoison: messages that are not envelopes go to the dead letters and
// never stall the consumer.
func testPoison(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 5, 5 })
	raw, ok := h.b.(RawPublisher)
	if !ok {
		t.Skip("backend does not implement backendtest.RawPublisher")
	}
	const good, poison = 200, 20
	for i := range good {
		if i%(good/poison) == 0 {
			body := []byte(fmt.Sprintf("garbage %d \x00\xff", i))
			if i%2 == 0 {
				body = nil
			}
			if err := raw.PublishRaw(ctxT(t), h.q.Name, body); err != nil {
				t.Fatalf("PublishRaw: %v", err)
			}
		}
		h.enqueue(job{N: i})
	}
	done := make(chan int, good)
	h.start(func(ctx context.Context, j job) error { done <- j.N; return nil })
	seen := map[int]bool{}
	for range good {
		seen[recv(t, done, "a good job")] = true
	}
	if len(seen) != good {
		t.Fatalf("%d distinct good jobs done, want %d", len(seen), good)
	}
	dl := h.deadLetters(poison)
	for _, d := range dl {
		if d.Envelope != nil || d.Reason == "" {
			t.Errorf("poison dead letter %+v, want no envelope and a reason", d)
		}
	}
}

// testTimeout: the queue's timeout is a deadline on the handler's context.
func testTimeout(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Timeout = 200 * time.Millisecond; q.MaxAttempts = 1 })
	h.enqueue(job{N: 1})
	errs := make(chan error, 1)
	h.start(func(ctx context.Context, j job) error {
		if _, ok := ctx.Deadline(); !ok {
			errs <- errors.New("no deadline")
			return nil
		}
		select {
		case <-ctx.Done():
			errs <- nil
			return ctx.Err()
		case <-time.After(wait):
			errs <- errors.New("deadline never came")
			return nil
		}
	})
	if err := recv(t, errs, "the handler"); err != nil {
		t.Fatal(err)
	}
	dl := h.deadLetters(1)
	wantContains(t, dl[0].Reason, "deadline exceeded", "timed-out job's reason")
}

// testRedelivery: a job whose handler has not finished when the worker's
// shutdown timeout passes is not acked, and a new worker runs it again.
func testRedelivery(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	id := h.enqueue(job{N: 1})
	started := make(chan string, 1)
	stop := h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		started <- info.ID
		<-ctx.Done() // cancelled when the shutdown timeout passes
		return ctx.Err()
	}, runtime.WithShutdownTimeout(100*time.Millisecond))
	if got := recv(t, started, "the first run"); got != id {
		t.Fatalf("ran %s, want %s", got, id)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
	again := make(chan runtime.Info, 1)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		again <- info
		return nil
	})
	info := recv(t, again, "the redelivery")
	if info.ID != id || info.Attempt != 1 {
		t.Fatalf("redelivered %+v, want job %s at attempt 1", info, id)
	}
}

// testNoLossNoDup: many concurrent producers and two workers; every job runs
// exactly once.
func testNoLossNoDup(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const producers, perProducer = 20, 500
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 50, 10 })
	var mu sync.Mutex
	counts := map[int]int{}
	done := make(chan struct{}, producers*perProducer)
	handler := func(ctx context.Context, j job) error {
		mu.Lock()
		counts[j.N]++
		mu.Unlock()
		done <- struct{}{}
		return nil
	}
	h.start(handler)
	h.start(handler)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				if _, err := runtime.Enqueue(ctxT(t), h.p, h.q, job{N: p*perProducer + i}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Enqueue: %v", err)
	}
	for range producers * perProducer {
		recv(t, done, "a job")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(counts) != producers*perProducer {
		t.Fatalf("%d distinct jobs ran, want %d", len(counts), producers*perProducer)
	}
	for n, c := range counts {
		if c != 1 {
			t.Errorf("job %d ran %d times, want once", n, c)
		}
	}
}
