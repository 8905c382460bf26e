package backendtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// testDeadLetterReasons: a permanent error and an undecodable payload are
// dead-lettered at once with their reasons; the permanent one on attempt 1.
func testDeadLetterReasons(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	permID := h.enqueue(job{N: 1})
	badID, err := runtime.Hooks(hooks.K).EnqueuePayload(ctxT(t), h.p, h.q, []byte{0xc1}) // 0xc1 is never valid msgpack
	if err != nil {
		t.Fatalf("EnqueuePayload: %v", err)
	}
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		return runtime.Permanent(errors.New("card declined"))
	})
	dl := h.deadLetters(2)
	byID := map[string]admin.DeadLetterInfo{}
	for _, d := range dl {
		if d.Poison {
			t.Fatalf("dead letter without envelope: %+v", d)
		}
		byID[d.ID] = d
	}
	perm, bad := byID[permID], byID[badID]
	wantContains(t, perm.Reason, "card declined", "permanent reason")
	if perm.Attempt != 1 {
		t.Errorf("permanent failure dead-lettered at %+v, want attempt 1", perm)
	}
	wantContains(t, bad.Reason, "decode backendtest.job payload", "undecodable payload reason")
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
	const good, poison = 200, 20
	for i := range good {
		if i%(good/poison) == 0 {
			body := []byte(fmt.Sprintf("garbage %d \x00\xff", i))
			if (i/(good/poison))%2 == 0 {
				body = nil
			}
			h.publishRaw(body)
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
		if !d.Poison || d.Reason == "" {
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
// shutdown timeout passes is not acked, and a new worker runs it again, as
// its next attempt, after telling its observers that the delivery is a
// redelivery (the delivery implements runtime.Redelivery).
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
	if err := stop(); !errors.Is(err, runtime.ErrShutdownTimeout) {
		t.Fatalf("Run returned %v, want ErrShutdownTimeout: the handler was abandoned", err)
	}
	again := make(chan runtime.Info, 1)
	observed := make(outcomes, 4)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		again <- info
		return nil
	}, runtime.WithObserver(observed))
	info := recv(t, again, "the redelivery")
	if info.ID != id || info.Attempt != 2 {
		t.Fatalf("redelivered %+v, want job %s at attempt 2", info, id)
	}
	// Told before the run, so it is there once the handler has run.
	if o := recv(t, observed, "the redelivery's first outcome"); o.Kind != runtime.OutcomeRedelivered || o.JobID != id || o.Attempt != 2 {
		t.Errorf("first outcome of the second run %+v, want %v of job %s at attempt 2", o, runtime.OutcomeRedelivered, id)
	}
}

// outcomes is a runtime.Observer that passes on every outcome.
type outcomes chan runtime.Outcome

func (o outcomes) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }
func (o outcomes) Outcome(_ context.Context, out runtime.Outcome)                 { o <- out }

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
	stop1 := h.start(handler)
	stop2 := h.start(handler)
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
	stop1()
	stop2()
	// Nothing may be left behind or come again: behind a sentinel enqueued
	// now, a worker taking one job at a time must see the sentinel first.
	h.expectNext(-1)
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

// expectNext enqueues a sentinel job n and checks that a worker taking one
// job at a time runs it first: nothing older is left on the queue.
func (h *harness) expectNext(n int) {
	h.t.Helper()
	h.enqueue(job{N: n})
	one := *h
	one.q.Prefetch, one.q.Concurrency = 1, 1
	first := make(chan int, 1)
	var once sync.Once
	stop := one.start(func(ctx context.Context, j job) error {
		once.Do(func() { first <- j.N })
		return nil
	})
	if got := recv(h.t, first, "the sentinel"); got != n {
		h.t.Errorf("first job after the run was %d, want the sentinel %d: a job was left behind or delivered again", got, n)
	}
	_ = stop()
}

// testGracefulDrain: a handler that finishes within the shutdown timeout is
// settled once, and its job does not come back.
func testGracefulDrain(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	h.enqueue(job{N: 1})
	started, release := make(chan struct{}), make(chan struct{})
	stop := h.start(func(ctx context.Context, j job) error {
		close(started)
		select {
		case <-release:
		case <-time.After(wait):
		}
		return nil
	})
	recv(t, started, "the handler")
	errc := make(chan error, 1)
	go func() { errc <- stop() }()
	close(release)
	if err := recv(t, errc, "the worker to stop"); err != nil {
		t.Fatalf("Run = %v, want nil after a clean shutdown", err)
	}
	h.expectNext(-1)
}

// testAbandonedNotAcked: a handler that ignores its context and returns
// after the shutdown timeout has its result dropped; the job comes again, as
// its next attempt.
func testAbandonedNotAcked(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	id := h.enqueue(job{N: 1})
	started, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	stop := h.start(func(ctx context.Context, j job) error {
		defer close(returned)
		close(started)
		select { // ignores ctx on purpose
		case <-release:
		case <-time.After(wait):
		}
		return nil
	}, runtime.WithShutdownTimeout(50*time.Millisecond))
	recv(t, started, "the handler")
	if err := stop(); !errors.Is(err, runtime.ErrShutdownTimeout) {
		t.Fatalf("Run = %v, want it to report ErrShutdownTimeout", err)
	}
	close(release)
	recv(t, returned, "the abandoned handler to return")
	again := make(chan runtime.Info, 1)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		again <- info
		return nil
	})
	if info := recv(t, again, "the redelivery"); info.ID != id || info.Attempt != 2 {
		t.Fatalf("redelivered %+v, want job %s at attempt 2", info, id)
	}
}

// testPrefetch: a subscription holds at most Prefetch unsettled deliveries;
// the rest go to another subscriber, and Close returns what it held.
func testPrefetch(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	const n, small = 10, 3
	for i := range n {
		h.enqueue(job{N: i})
	}
	ctx := ctxT(t)
	q1 := h.q
	q1.Prefetch, q1.Concurrency = small, small
	s1, err := h.b.Consume(ctx, q1)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	defer s1.Close()
	var held []runtime.Delivery
	for range small {
		held = append(held, recv(t, s1.Deliveries(), "a delivery within the prefetch"))
	}
	q2 := h.q
	q2.Prefetch, q2.Concurrency = n, n
	s2, err := h.b.Consume(ctx, q2)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	for range n - small {
		d := recv(t, s2.Deliveries(), "the deliveries beyond the first prefetch")
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if err := s2.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := held[0].Ack(ctx); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := s1.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// The two deliveries s1 held unsettled are back, and nothing else.
	s3, err := h.b.Consume(ctx, q2)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	defer s3.Close()
	back := map[string]bool{}
	for range small - 1 {
		d := recv(t, s3.Deliveries(), "a delivery returned by Close")
		back[d.Envelope().ID] = true
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	for _, d := range held[1:] {
		if !back[d.Envelope().ID] {
			t.Errorf("job %s held unsettled by a closed subscription did not come back", d.Envelope().ID)
		}
	}
	if rc, ok := h.b.(admin.ReadyCounter); ok {
		if got, err := rc.Ready(ctx, h.q.Name); err != nil || got != 0 {
			t.Errorf("Ready = %d, %v; want 0 left", got, err)
		}
	}
}

// testUnsettledDeadLetters: a job whose deliveries are never settled (as
// when it crashes its worker) comes back with its attempt raised each time,
// and after max_attempts deliveries it is dead-lettered with a reason that
// says so, instead of looping forever.
func testUnsettledDeadLetters(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	const maxAttempts = 3
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = maxAttempts })
	id := h.enqueue(job{N: 1})
	ctx := ctxT(t)
	for want := 1; want <= maxAttempts; want++ {
		sub, err := h.b.Consume(ctx, h.q)
		if err != nil {
			t.Fatalf("Consume: %v", err)
		}
		d := recv(t, sub.Deliveries(), fmt.Sprintf("delivery %d", want))
		if env := d.Envelope(); env.ID != id || env.Attempt != want {
			t.Fatalf("delivery %d: job %s at attempt %d, want %s at attempt %d", want, env.ID, env.Attempt, id, want)
		}
		if err := sub.Close(); err != nil { // unsettled: as if its worker crashed
			t.Fatalf("Close: %v", err)
		}
	}
	// The next delivery is past max_attempts: the backend dead-letters it
	// instead of handing it out.
	before := time.Now()
	sub, err := h.b.Consume(ctx, h.q)
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	defer sub.Close()
	dl := h.deadLetters(1)
	if dl[0].Poison || dl[0].ID != id {
		t.Fatalf("dead letter %+v, want job %s", dl[0], id)
	}
	wantContains(t, dl[0].Reason, fmt.Sprintf("delivered %d times without being settled", maxAttempts), "reason")
	wantDeadBetween(t, dl[0], before, time.Now())
}
