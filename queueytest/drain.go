package queueytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// Result says what became of one run of a job.
type Result string

// Results of a run.
const (
	// Done: the handler returned nil; the job was acked.
	Done Result = "done"
	// Retried: the run failed; the job waits Delay and runs again.
	Retried Result = "retried"
	// Deferred: the handler returned runtime.Defer; the job waits Delay.
	Deferred Result = "deferred"
	// DeadLettered: permanent failure, last attempt, a payload that does
	// not decode or a job of another kind.
	DeadLettered Result = "dead-lettered"
	// Requeued: the outcome could not be recorded; the job was put back.
	Requeued Result = "requeued"
)

// Outcome is what became of one run of a job in Drain.
type Outcome struct {
	ID      string
	Queue   string
	Kind    string
	Attempt int // the 1-based run
	Result  Result
	// Delay is how long a Retried or Deferred job waits, rounded up as
	// the backend rounds it.
	Delay time.Duration
	// Reason is the run's error for Retried, the reason for DeadLettered.
	Reason string
}

// DrainTimeout bounds Drain: a worker still busy after it fails the test.
const DrainTimeout = 30 * time.Second

// Drain runs w, a worker over b with its handlers registered, until no job
// is ready or running on any queue w handles, stops it, and returns the
// outcome of every run, in the order the runs ended. Jobs held in a wait
// (retried, deferred, enqueued with a delay) are not waited for; each waits
// at least a second, and one whose wait ends while Drain still runs may be
// run and reported too. It fails
// t when w's Run fails or the queues are still busy after DrainTimeout.
// A worker runs once: Drain it once.
func Drain(t testing.TB, b *Backend, w *runtime.Worker) []Outcome {
	t.Helper()
	b.mu.Lock()
	first := len(b.outcomes)
	b.mu.Unlock()
	queues := w.Queues()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	deadline := time.NewTimer(DrainTimeout)
	defer deadline.Stop()
	for !b.drained(queues) {
		select {
		case <-b.changed:
		case err := <-errc:
			t.Fatalf("queueytest: worker stopped while draining: %v", err)
		case <-deadline.C:
			cancel()
			<-errc
			t.Fatalf("queueytest: queues still busy after %v", DrainTimeout)
		}
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("queueytest: worker Run: %v", err)
		}
	case <-deadline.C:
		t.Fatalf("queueytest: worker did not stop within %v", DrainTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.outcomes[first:])
}

// drained reports whether every one of queues has a subscription and no
// job ready or unsettled, with nothing published or settled while it
// looked: a handler of one queue may enqueue onto another one already
// looked at.
func (b *Backend) drained(queues []runtime.QueueConfig) bool {
	for {
		b.mu.Lock()
		before := len(b.enqueued) + len(b.outcomes)
		if b.settling > 0 {
			b.mu.Unlock()
			return false
		}
		for _, q := range queues {
			if b.consumed[q.Name] == 0 {
				b.mu.Unlock()
				return false
			}
		}
		b.mu.Unlock()
		for _, q := range queues {
			if b.Busy(q.Name) {
				return false
			}
		}
		b.mu.Lock()
		after, settling := len(b.enqueued)+len(b.outcomes), b.settling
		b.mu.Unlock()
		if settling > 0 {
			return false
		}
		if before == after {
			return true
		}
	}
}
