package backendtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// early is how much sooner than its delay d a wait may seem to end: the
// measured gap starts before the wait does, so only a broker's clock,
// outside this process, can make it look shorter: its whole milliseconds,
// and its catching up with a stepped system clock (brokertest.ClockSlack).
func early(d time.Duration) time.Duration { return brokertest.ClockSlack(d) }

// testRetryBackoff: a failing job runs max_attempts times, each retry no
// sooner than retry_base*2^(n-1), then is dead-lettered with its last error.
func testRetryBackoff(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 3 })
	id := h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		runs <- r
		return fmt.Errorf("boom %d", r.Attempt)
	})
	var rs []run
	for range 3 {
		rs = append(rs, recv(t, runs, "a run"))
	}
	for i, r := range rs {
		if r.Attempt != i+1 {
			t.Fatalf("runs %s, want attempts 1, 2, 3", fmtRuns(rs))
		}
	}
	for i := 1; i < len(rs); i++ {
		want := h.q.RetryDelay(i)
		if gap := rs[i].At.Sub(rs[i-1].At); gap < want-early(want) {
			t.Errorf("retry %d came %v after run %d, want at least %v", i, gap, i, want)
		}
	}
	dl := h.deadLetters(1)
	if dl[0].Poison || dl[0].ID != id {
		t.Fatalf("dead letter %+v, want job %s", dl[0], id)
	}
	wantContains(t, dl[0].Reason, "boom 3", "dead-letter reason")
	wantContains(t, dl[0].LastError, "boom 3", "LastError")
	if dl[0].Attempt != 3 {
		t.Errorf("dead envelope attempt %d, want 3", dl[0].Attempt)
	}
}

// testRetryThenSuccess: a job that fails once and then succeeds is acked
// with no dead letter, and sees its previous attempt's number.
func testRetryThenSuccess(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		runs <- r
		if r.Attempt == 1 {
			return errors.New("transient")
		}
		return nil
	})
	r1, r2 := recv(t, runs, "first run"), recv(t, runs, "second run")
	if r1.Attempt != 1 || r2.Attempt != 2 {
		t.Fatalf("attempts %d, %d, want 1, 2", r1.Attempt, r2.Attempt)
	}
	if in, ok := h.b.(admin.Inspector); ok {
		dl, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{})
		if err != nil || dl.Total != 0 {
			t.Errorf("dead letters %+v (err %v), want none", dl.Letters, err)
		}
	}
}

// testPanicRetries: a panic counts as a failed run.
func testPanicRetries(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 2 })
	h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		panic("handler exploded")
	})
	recv(t, runs, "first run")
	if r := recv(t, runs, "second run"); r.Attempt != 2 {
		t.Fatalf("second run attempt %d, want 2", r.Attempt)
	}
	dl := h.deadLetters(1)
	wantContains(t, dl[0].Reason, "panic: handler exploded", "dead-letter reason")
}

// testDeferNoAttempt: a deferral holds the job at least its delay and does
// not burn an attempt, even with max_attempts=1.
func testDeferNoAttempt(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 1 })
	h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	var n atomic.Int32
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		if n.Add(1) < 3 {
			return runtime.Defer(1200 * time.Millisecond)
		}
		return nil
	})
	var rs []run
	for range 3 {
		rs = append(rs, recv(t, runs, "a run"))
	}
	for i, r := range rs {
		if r.Attempt != 1 {
			t.Fatalf("runs %s: deferral burned an attempt", fmtRuns(rs))
		}
		if i > 0 {
			// 1.2s rounds up to the 1s granularity: 2s.
			if gap := r.At.Sub(rs[i-1].At); gap < 2*time.Second-early(2*time.Second) {
				t.Errorf("deferred run %d came after %v, want at least 2s (1.2s rounded up)", i, gap)
			}
		}
	}
}

// testDeferZero: Defer(0) and Defer(d < 0) wait one granularity (1s), so
// a job that keeps deferring cannot loop ahead of the backlog: with
// prefetch 1, job 1, waiting behind job 0, runs before job 0 returns.
func testDeferZero(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.MaxAttempts = 1, 1, 1 })
	h.enqueue(job{N: 0})
	h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	var zeroRuns atomic.Int32
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		if j.N != 0 {
			return nil
		}
		switch zeroRuns.Add(1) {
		case 1:
			return runtime.Defer(0)
		case 2:
			return runtime.Defer(-time.Hour)
		}
		return nil
	})
	var rs []run
	for range 4 {
		rs = append(rs, recv(t, runs, "a run"))
	}
	if rs[0].N != 0 || rs[1].N != 1 || rs[2].N != 0 || rs[3].N != 0 {
		t.Fatalf("runs %s, want job 0 (defers 0), job 1, then job 0 twice (its Defer(0) and Defer(-1h) each waited)", fmtRuns(rs))
	}
	for i, prev := range []run{rs[0], rs[2]} {
		next := rs[2+i]
		if gap := next.At.Sub(prev.At); gap < runtime.DefaultGranularity-early(runtime.DefaultGranularity) {
			t.Errorf("deferral %d with a delay of zero or less came back after %v, want at least one granularity (%v)", i+1, gap, runtime.DefaultGranularity)
		}
		if next.Attempt != 1 {
			t.Errorf("deferral %d burned an attempt: run attempt %d, want 1", i+1, next.Attempt)
		}
	}
}

// testDeferAhead: a deferred job comes back ahead of the jobs still waiting
// on its queue. With prefetch 1, job 0 defers and job 1 is held until job 0
// is back on the queue (seen through admin.ReadyCounter); the next run must
// then be job 0, not job 2, or, where the backend lets normal jobs through
// beside high-priority ones (Features.DeferAheadSlack), job 0 after at
// most that many of jobs 2, 3, ...
func testDeferAhead(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	if f.NoPriorityOrder {
		t.Skip("backend queues do not order by priority")
	}
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	order := deferFirstOfBacklog(t, h)
	if len(order) < 3 || order[0] != 0 || order[1] != 1 {
		t.Fatalf("run order %v, want 0 (defers), 1, then 0 again ahead of 2..%d", order, deferBacklog)
	}
	back := slices.Index(order[2:], 0) // jobs of the backlog run before job 0 came back
	inOrder := back >= 0
	for i := range max(back, 0) {
		inOrder = inOrder && order[2+i] == 2+i
	}
	if !inOrder || back > f.DeferAheadSlack {
		t.Fatalf("run order %v, want 0 (defers), 1, then 0 again ahead of 2..%d, after at most %d of them (Features.DeferAheadSlack)", order, deferBacklog, f.DeferAheadSlack)
	}
}

// testNoPriorityDefersFIFO: a queue of runtime.NoPriority takes only
// priority 0, and a job deferred on it returns behind the jobs waiting on
// it, in FIFO order.
func testNoPriorityDefersFIFO(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) {
		q.Prefetch, q.Concurrency, q.MaxPriority = 1, 1, runtime.NoPriority
	})
	_, err := runtime.Enqueue(ctxT(t), h.p, h.q, job{}, runtime.WithPriority(1))
	wantErrIs(t, err, runtime.ErrInvalidOption, "priority 1 on a queue without priorities")
	wantContains(t, err.Error(), "declares no priority", "the refusal")
	order := deferFirstOfBacklog(t, h, runtime.WithPriority(0))
	want := []int{0}
	for i := 1; i <= deferBacklog; i++ {
		want = append(want, i)
	}
	want = append(want, 0)
	if !slices.Equal(order, want) {
		t.Fatalf("run order %v, want %v: job 0 defers and returns behind the backlog", order, want)
	}
}

// deferBacklog is how many jobs wait behind the deferred one in
// deferFirstOfBacklog.
const deferBacklog = 20

// deferFirstOfBacklog enqueues jobs 0..deferBacklog (with opts) onto h's
// queue, whose prefetch is 1, and runs them: job 0 defers once, and job 1
// is held until job 0 is back on the queue (seen through admin.ReadyCounter). It
// returns the order of the runs up to job 0's second one.
func deferFirstOfBacklog(t *testing.T, h *harness, opts ...runtime.EnqueueOption) []int {
	t.Helper()
	rc, ok := h.b.(admin.ReadyCounter)
	if !ok {
		t.Skip("backend does not implement admin.ReadyCounter")
	}
	for i := 0; i <= deferBacklog; i++ {
		h.enqueue(job{N: i}, opts...)
	}
	var (
		mu    sync.Mutex
		order []int
	)
	done := make(chan struct{})
	waitErr := make(chan error, 1)
	h.start(func(ctx context.Context, j job) error {
		mu.Lock()
		order = append(order, j.N)
		first := len(order) == 1
		if j.N == 0 && !first {
			close(done)
		}
		mu.Unlock()
		switch {
		case j.N == 0 && first:
			return runtime.Defer(time.Second)
		case j.N == 1:
			// Jobs 2..deferBacklog wait; job 0 joins them when its wait
			// ends.
			waitErr <- waitReady(ctx, rc, h.q.Name, deferBacklog)
		}
		return nil
	})
	if err := recv(t, waitErr, "the deferred job back on the queue"); err != nil {
		t.Fatal(err)
	}
	recv(t, done, "the deferred job's return")
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(order)
}

// waitReady waits until at least n jobs are ready on queue.
func waitReady(ctx context.Context, rc admin.ReadyCounter, queue string, n int) error {
	deadline := time.Now().Add(wait)
	for {
		got, err := rc.Ready(ctx, queue)
		if err != nil {
			return err
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d jobs ready on %q after %v, want %d", got, queue, wait, n)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not a synchronisation
	}
}

// testShortWaitFirst: a short wait published after a long one ends first.
func testShortWaitFirst(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	start := time.Now()
	h.enqueue(job{N: 3}, runtime.WithDelay(3*time.Second))
	h.enqueue(job{N: 1}, runtime.WithDelay(time.Second))
	runs := make(chan run, 2)
	h.start(func(ctx context.Context, j job) error { runs <- runOf(ctx, j); return nil })
	a, b := recv(t, runs, "first"), recv(t, runs, "second")
	if a.N != 1 || b.N != 3 {
		t.Fatalf("order %d, %d, want the 1s wait before the 3s one", a.N, b.N)
	}
	if b.At.Sub(start) < 3*time.Second-early(3*time.Second) {
		t.Errorf("3s wait ended after %v", b.At.Sub(start))
	}
}

// testDelayedEnqueue: a job enqueued with a delay does not run sooner.
func testDelayedEnqueue(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	start := time.Now()
	h.enqueue(job{N: 1}, runtime.WithDelay(1500*time.Millisecond))
	runs := make(chan run, 1)
	h.start(func(ctx context.Context, j job) error { runs <- runOf(ctx, j); return nil })
	r := recv(t, runs, "the delayed job")
	if got := r.At.Sub(start); got < 2*time.Second-early(2*time.Second) {
		t.Fatalf("delayed job ran after %v, want at least 2s (1.5s rounded up)", got)
	}
	if r.Attempt != 1 {
		t.Errorf("attempt %d, want 1", r.Attempt)
	}
}

// testWaitRefusals: waits above MaxDeferral after rounding up, and waits
// onto undeclared queues, are refused.
func testWaitRefusals(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	ctx := ctxT(t)
	env := &runtime.Envelope{ID: "x", Queue: h.q.Name, Kind: h.q.Kind, Attempt: 1, MaxAttempts: 1, EnqueuedAt: time.Now()}
	for _, d := range []time.Duration{
		runtime.MaxDeferral + time.Millisecond,
		runtime.MaxDeferral.Truncate(time.Second) + time.Millisecond, // rounds up past the limit
		1000 * 24 * time.Hour,
	} {
		wantErrIs(t, h.b.Publish(ctx, env, d), runtime.ErrDelayTooLong, fmt.Sprintf("wait of %v", d))
	}
	other := *env
	other.Queue = h.q.Name + ".never-declared"
	wantErrIs(t, h.b.Publish(ctx, &other, time.Second), runtime.ErrUnknownQueue, "wait onto an undeclared queue")
	if err := h.b.Publish(ctx, &other, 0); err == nil {
		t.Errorf("publish to an undeclared queue succeeded, want an error")
	}
	// A handler's too-long deferral is a failed run, not a lost job.
	h2 := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 1 })
	id := h2.enqueue(job{N: 1})
	h2.start(func(ctx context.Context, j job) error { return runtime.Defer(runtime.MaxDeferral + time.Hour) })
	dl := h2.deadLetters(1)
	if dl[0].Poison || dl[0].ID != id {
		t.Fatalf("dead letter %+v, want job %s", dl[0], id)
	}
	wantContains(t, dl[0].Reason, "delay too long", "dead-letter reason")
}

// panickyError is an error whose Error method panics.
type panickyError struct{}

func (panickyError) Error() string { panic("Error() exploded") }

// testHostileErrors: a handler's error that cannot be read as an outcome (a
// nil *DeferError, an error whose Error method panics) fails the run like
// a panic, and the worker goes on; Permanent(Defer(d)) dead-letters at once
// instead of deferring.
func testHostileErrors(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.MaxAttempts = 2 })
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		runs <- r
		switch {
		case j.N == 1 && r.Attempt == 1:
			var nilDefer *runtime.DeferError
			return nilDefer
		case j.N == 2 && r.Attempt == 1:
			return panickyError{}
		case j.N == 3:
			return runtime.Permanent(runtime.Defer(time.Hour))
		}
		return nil
	})
	h.enqueue(job{N: 1})
	h.enqueue(job{N: 2})
	h.enqueue(job{N: 3})
	seen := map[int][]int{}
	for len(seen[1]) < 2 || len(seen[2]) < 2 || len(seen[3]) < 1 {
		r := recv(t, runs, fmt.Sprintf("the runs so far: %v", seen))
		seen[r.N] = append(seen[r.N], r.Attempt)
	}
	for _, n := range []int{1, 2} {
		if got := seen[n]; got[0] != 1 || got[1] != 2 {
			t.Errorf("job %d ran at attempts %v, want 1 then 2 (a failed run, retried)", n, got)
		}
	}
	dl := h.deadLetters(1)
	if dl[0].Poison || dl[0].Attempt != 1 {
		t.Fatalf("dead letter %+v, want job 3 dead-lettered after its first run", dl[0])
	}
	wantContains(t, dl[0].Reason, "permanent", "dead-letter reason of Permanent(Defer(1h))")
	if got := seen[3]; len(got) != 1 {
		t.Errorf("job 3 ran %d times, want once", len(got))
	}
}
