package backendtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// pauseNotice is how soon after PauseQueue returns every worker must have
// stopped taking the queue's jobs.
const pauseNotice = time.Second

// quietWindow is how long a paused queue is watched for a job that should
// not start.
const quietWindow = time.Second

// testPauseResume: a paused queue's running job finishes, no job starts
// from a second after the pause until the resume while enqueues go on, a
// worker started while the queue is paused stays idle, and after the
// resume every job is handled.
func testPauseResume(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 5, 2 })
	p, ok := h.b.(admin.Pauser)
	if !ok {
		t.Skip("backend does not implement admin.Pauser")
	}
	if err := p.PauseQueue(ctxT(t), h.q.Name+".nope"); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("PauseQueue of a queue that does not exist = %v, want ErrUnknownQueue", err)
	}
	var mu sync.Mutex
	starts := map[int]time.Time{}
	started := make(chan int, 100)
	release := make(chan struct{})
	handler := func(ctx context.Context, j job) error {
		mu.Lock()
		starts[j.N] = time.Now()
		mu.Unlock()
		started <- j.N
		if j.N == 0 {
			<-release // in flight across the pause
		}
		return nil
	}
	h.start(handler)
	h.enqueue(job{N: 0})
	recv(t, started, "the job in flight")

	if err := p.PauseQueue(ctxT(t), h.q.Name); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	pausedAt := time.Now()
	if paused, err := p.Paused(ctxT(t), h.q.Name); err != nil || !paused {
		t.Fatalf("Paused after PauseQueue = %v, %v; want true", paused, err)
	}
	t.Cleanup(func() { _ = p.ResumeQueue(context.Background(), h.q.Name) })
	h.start(handler) // started while paused: stays idle
	close(release)   // the job in flight finishes
	// Enqueued once every worker must have heard of the pause, these
	// must wait for the resume.
	<-time.After(time.Until(pausedAt.Add(pauseNotice)))
	const n = 20
	for i := 1; i <= n; i++ {
		h.enqueue(job{N: i}) // enqueues go on
	}
	quiet := time.After(quietWindow)
	func() {
		for {
			select {
			case <-started:
			case <-quiet:
				return
			}
		}
	}()
	mu.Lock()
	for i, at := range starts {
		if at.After(pausedAt.Add(pauseNotice)) {
			t.Errorf("job %d started %v after the pause, want none later than %v", i, at.Sub(pausedAt), pauseNotice)
		}
	}
	mu.Unlock()

	if err := p.ResumeQueue(ctxT(t), h.q.Name); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	if paused, err := p.Paused(ctxT(t), h.q.Name); err != nil || paused {
		t.Fatalf("Paused after ResumeQueue = %v, %v; want false", paused, err)
	}
	for {
		mu.Lock()
		done := len(starts) == n+1
		mu.Unlock()
		if done {
			break
		}
		recv(t, started, "the jobs enqueued while paused, after the resume")
	}
}
