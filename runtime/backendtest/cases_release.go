package backendtest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// releaseJobs is how many jobs the stop and pause cases run, and
// releaseCycles how many stops or pauses they make while the jobs run.
const (
	releaseJobs   = 300
	releaseCycles = 10
)

// testStopBurnsNoAttempt: a worker stopped cleanly, again and again while
// its queue is busy, gives back the jobs it fetched and never started
// without counting a run: with max_attempts=1, every job runs once at
// attempt 1 and none is dead-lettered.
func testStopBurnsNoAttempt(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.MaxAttempts = 50, 2, 1 })
	r := newReleaseRecorder(t, releaseJobs)
	for i := range releaseJobs {
		h.enqueue(job{N: i})
	}
	for cycle := range releaseCycles {
		stop := h.start(r.handle, runtime.WithObserver(r))
		r.waitHandled(t, min((cycle+1)*releaseJobs/(releaseCycles+1), releaseJobs), "before stop %d", cycle+1)
		if err := stop(); err != nil {
			t.Fatalf("stop %d: Run returned %v, want nil (a clean stop)", cycle+1, err)
		}
	}
	h.start(r.handle, runtime.WithObserver(r))
	r.waitHandled(t, releaseJobs, "after the last stop")
	r.check(t)
}

// testPauseBurnsNoAttempt is testStopBurnsNoAttempt with pauses and resumes
// of the queue instead of stops of the worker.
func testPauseBurnsNoAttempt(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency, q.MaxAttempts = 50, 2, 1 })
	p, ok := h.b.(admin.Pauser)
	if !ok {
		t.Skip("backend does not implement admin.Pauser")
	}
	t.Cleanup(func() { _ = p.ResumeQueue(context.Background(), h.q.Name) })
	r := newReleaseRecorder(t, releaseJobs)
	for i := range releaseJobs {
		h.enqueue(job{N: i})
	}
	h.start(r.handle, runtime.WithObserver(r))
	for cycle := range releaseCycles {
		r.waitHandled(t, min((cycle+1)*releaseJobs/(releaseCycles+1), releaseJobs), "before pause %d", cycle+1)
		if err := p.PauseQueue(ctxT(t), h.q.Name); err != nil {
			t.Fatalf("PauseQueue: %v", err)
		}
		// Within the pause notice every worker stops taking jobs: the
		// ones it had fetched go back then.
		r.waitQuiet(t, pauseNotice)
		if err := p.ResumeQueue(ctxT(t), h.q.Name); err != nil {
			t.Fatalf("ResumeQueue: %v", err)
		}
	}
	r.waitHandled(t, releaseJobs, "after the last resume")
	r.check(t)
}

// releaseRecorder counts the runs of each job, and the outcomes.
type releaseRecorder struct {
	n       int
	mu      sync.Mutex
	runs    map[int][]int // job N -> attempts it ran at
	dead    []string
	handled chan struct{}
	count   int
}

func newReleaseRecorder(t *testing.T, n int) *releaseRecorder {
	return &releaseRecorder{n: n, runs: map[int][]int{}, handled: make(chan struct{}, 1)}
}

func (r *releaseRecorder) handle(ctx context.Context, j job) error {
	info, _ := runtime.InfoFromContext(ctx)
	r.mu.Lock()
	r.runs[j.N] = append(r.runs[j.N], info.Attempt)
	if len(r.runs[j.N]) == 1 {
		r.count++
	}
	r.mu.Unlock()
	select {
	case r.handled <- struct{}{}:
	default:
	}
	time.Sleep(time.Millisecond) // a job that takes a moment, so fetched jobs wait
	return nil
}

func (r *releaseRecorder) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }

func (r *releaseRecorder) Outcome(_ context.Context, o runtime.Outcome) {
	if o.Kind == runtime.OutcomeDeadLettered {
		r.mu.Lock()
		r.dead = append(r.dead, fmt.Sprintf("%s: %s", o.JobID, o.Reason))
		r.mu.Unlock()
	}
}

func (r *releaseRecorder) handledCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// waitHandled waits until at least n distinct jobs have run.
func (r *releaseRecorder) waitHandled(t *testing.T, n int, format string, args ...any) {
	t.Helper()
	deadline := time.After(wait)
	for r.handledCount() < n {
		select {
		case <-r.handled:
		case <-deadline:
			t.Fatalf("%d of %d jobs ran within %v %s; dead-lettered: %v", r.handledCount(), n, wait, fmt.Sprintf(format, args...), r.dead)
		}
	}
}

// waitQuiet waits until no job has started for quiet, bounded by the
// suite's wait.
func (r *releaseRecorder) waitQuiet(t *testing.T, quiet time.Duration) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case <-r.handled:
		case <-time.After(quiet):
			return
		case <-deadline:
			t.Fatalf("jobs still started %v after the pause", wait)
		}
	}
}

// check says that every job ran exactly once, at attempt 1, and that none
// was dead-lettered.
func (r *releaseRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.dead) > 0 {
		t.Errorf("%d jobs dead-lettered, want none: %v", len(r.dead), r.dead[:min(len(r.dead), 5)])
	}
	for n := range r.n {
		if runs := r.runs[n]; len(runs) != 1 || runs[0] != 1 {
			t.Errorf("job %d ran at attempts %v, want once at attempt 1", n, runs)
		}
	}
}
