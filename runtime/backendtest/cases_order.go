package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// testPriorityOrder: jobs waiting on a queue run highest priority first and
// in publish order within a priority.
func testPriorityOrder(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	if f.NoPriorityOrder || f.CoarsePriority {
		t.Skip("backend queues do not order by every priority level")
	}
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	var want []int
	prios := []int{0, 5, 0, 10, 5, 0, 10, 1}
	for i, p := range prios {
		h.enqueue(job{N: i}, runtime.WithPriority(p))
	}
	for _, p := range []int{10, 5, 1, 0} {
		for i, q := range prios {
			if q == p {
				want = append(want, i)
			}
		}
	}
	got := make(chan int, len(prios))
	h.start(func(ctx context.Context, j job) error { got <- j.N; return nil })
	var order []int
	for range prios {
		order = append(order, recv(t, got, "a job"))
	}
	if !slices.Equal(order, want) {
		t.Fatalf("run order %v, want %v (priority first, then FIFO)", order, want)
	}

	// A priority above the queue's maximum is refused before publishing.
	_, err := runtime.Enqueue(ctxT(t), h.p, h.q, job{}, runtime.WithPriority(h.q.MaxPriority+1))
	wantErrIs(t, err, runtime.ErrInvalidOption, "priority above max_priority")
}

// testInfo: handlers see the job's ID, attempt, max attempts, enqueue time
// and headers; a caller-chosen ID is kept.
func testInfo(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 7 })
	before := time.Now().Add(-time.Second)
	id := h.enqueue(job{N: 1, Text: "héllo"}, runtime.WithHeaders(map[string]string{"traceparent": "00-abc-def-01"}))
	h.enqueue(job{N: 2}, runtime.WithID("my-own-id"))
	runs := make(chan run, 2)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		r.N = j.N
		if j.N == 1 && j.Text != "héllo" {
			return runtime.Permanent(fmt.Errorf("payload text %q", j.Text))
		}
		runs <- r
		return nil
	})
	got := map[int]run{}
	for range 2 {
		r := recv(t, runs, "a run")
		got[r.N] = r
	}
	r := got[1]
	if r.Info.ID != id || r.Info.Attempt != 1 || r.Info.MaxAttempts != 7 || r.Info.Queue != h.q.Name {
		t.Errorf("info = %+v, want ID %s, attempt 1 of 7 on %s", r.Info, id, h.q.Name)
	}
	if r.Info.EnqueuedAt.Before(before) || r.Info.EnqueuedAt.After(time.Now()) {
		t.Errorf("EnqueuedAt = %v, want between %v and now", r.Info.EnqueuedAt, before)
	}
	if r.Info.Headers["traceparent"] != "00-abc-def-01" {
		t.Errorf("headers = %v, want traceparent", r.Info.Headers)
	}
	if got[2].Info.ID != "my-own-id" {
		t.Errorf("ID = %q, want the caller's %q", got[2].Info.ID, "my-own-id")
	}
}

// testConcurrency: no more than Concurrency handlers of a queue run at once
// in one worker, and that many do.
func testConcurrency(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const limit = 3
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 10, limit })
	const n = 30
	for i := range n {
		h.enqueue(job{N: i})
	}
	var mu sync.Mutex
	running, peak := 0, 0
	full := make(chan struct{})
	done := make(chan int, n)
	h.start(func(ctx context.Context, j job) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		if running == limit && full != nil {
			close(full)
			full = nil
		}
		mu.Unlock()
		// The first handlers wait until the limit is reached, so the peak
		// is reached whatever the scheduling.
		select {
		case <-fullOrNil(&mu, &full):
		case <-time.After(wait):
		}
		mu.Lock()
		running--
		mu.Unlock()
		done <- j.N
		return nil
	})
	for range n {
		recv(t, done, "a job")
	}
	mu.Lock()
	defer mu.Unlock()
	if peak != limit {
		t.Fatalf("peak concurrency %d, want exactly %d", peak, limit)
	}
}

// fullOrNil returns the channel that closes when the limit is reached, or a
// closed one once it has been.
func fullOrNil(mu *sync.Mutex, full *chan struct{}) <-chan struct{} {
	mu.Lock()
	defer mu.Unlock()
	if *full == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return *full
}

// testUndeclaredProducer: a producer that declares nothing enqueues onto a
// queue declared by another on the same backend, and an enqueue onto a
// queue that does not exist is ErrUnknownQueue saying how to declare it,
// on every backend alike.
func testUndeclaredProducer(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	p := runtime.NewProducerUndeclared(h.b)
	id, err := runtime.Enqueue(ctxT(t), p, h.q, job{N: 1})
	if err != nil {
		t.Fatalf("undeclared producer onto a declared queue: %v", err)
	}
	runs := make(chan run, 1)
	h.start(func(ctx context.Context, j job) error { runs <- runOf(ctx, j); return nil })
	if r := recv(t, runs, "the job"); r.Info.ID != id {
		t.Errorf("ran job %s, want %s", r.Info.ID, id)
	}

	missing := h.q
	missing.Name += ".never-declared"
	_, err = runtime.Enqueue(ctxT(t), p, missing, job{N: 2})
	wantErrIs(t, err, runtime.ErrUnknownQueue, "enqueue onto a queue that does not exist")
	wantContains(t, err.Error(), fmt.Sprintf("%q", missing.Name), "error")
	wantContains(t, err.Error(), "declare it first: runtime.NewProducer(ctx, backend, queues...) declares the queues it is given", "error")
}

// testEnqueueMany: jobs enqueued together all run, once each, in the order
// given; onto a queue nobody declared, every one of them is reported.
func testEnqueueMany(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	const batches, per = 3, 100
	var all []string
	for b := range batches {
		jobs := make([]job, per)
		for i := range jobs {
			jobs[i] = job{N: b*per + i}
		}
		ids, err := runtime.EnqueueMany(ctxT(t), h.p, h.q, jobs)
		if err != nil {
			t.Fatalf("EnqueueMany: %v", err)
		}
		if len(ids) != per {
			t.Fatalf("EnqueueMany returned %d IDs, want %d", len(ids), per)
		}
		all = append(all, ids...)
	}
	runs := make(chan runtime.Info, batches*per)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		return nil
	})
	for i := range batches * per {
		if info := recv(t, runs, "a job"); info.ID != all[i] {
			t.Fatalf("run %d was job %s, want %s: jobs enqueued together must run in order", i, info.ID, all[i])
		}
	}
	if _, err := runtime.EnqueueMany(ctxT(t), h.p, h.q, []job{{}, {}}, runtime.WithID("same")); !errors.Is(err, runtime.ErrInvalidOption) {
		t.Errorf("EnqueueMany with WithID = %v, want ErrInvalidOption", err)
	}

	other := h.q
	other.Name += ".never-declared"
	p := runtime.NewProducerUndeclared(h.b)
	ids, err := runtime.EnqueueMany(ctxT(t), p, other, []job{{N: 1}, {N: 2}, {N: 3}})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Errs) != 3 || len(ids) != 3 {
		t.Fatalf("EnqueueMany onto an undeclared queue = %v, %v; want a BatchError for 3 jobs", ids, err)
	}
	for i, err := range be.Errs {
		if err == nil {
			t.Errorf("job %d onto an undeclared queue reported enqueued", i)
		}
	}
}
