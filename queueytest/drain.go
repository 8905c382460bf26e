package queueytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
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

// Outcome is what became of one run of a job.
type Outcome struct {
	// ID is the job's ID: the one Enqueue returned (or WithID gave),
	// kept across its retries and deferrals.
	ID string
	// Queue is the name of the queue the job ran from.
	Queue string
	// Kind is the job's kind, its Go type as %T prints it
	// ("emails.SendEmail"): runtime.KindOf of the job type, the
	// QueueConfig's Kind.
	Kind    string
	Attempt int // the 1-based run
	Result  Result
	// Delay is how long a Retried or Deferred job waits, rounded up as
	// the backend rounds it.
	Delay time.Duration
	// Reason is the run's error for Retried, the reason for DeadLettered.
	Reason string
}

// DrainTimeout bounds, in real time, how long RunReady and Drain wait for
// a worker to have nothing ready or running: a worker still busy after it
// fails the test.
const DrainTimeout = 30 * time.Second

// DrainSteps bounds how many times Drain moves the clock: a job deferred
// or retried without end fails the test after that many waits.
const DrainSteps = 1000

// RunReady runs w, a worker over b with its handlers registered, until no
// job is ready or running on any queue w handles and each of w's
// schedules waits for its next tick, without moving the clock, and
// returns the outcome of every run that ended since the last RunReady or
// Drain over b returned, in the order the runs ended. Jobs held in a wait
// (retried, deferred, enqueued with a delay) stay there until the clock
// reaches their time (b.Clock().Advance).
//
// The first RunReady or Drain of w starts it (do not Run it yourself);
// it keeps running between calls, until the test ends. A schedule whose
// lease another worker holds never waits for its tick: give each schedule
// to one worker of a test. RunReady fails t
// when w's Run fails or the queues are still busy after DrainTimeout.
func RunReady(t testing.TB, b *Backend, w *runtime.Worker) []Outcome {
	t.Helper()
	b.settle(t, w)
	return b.newOutcomes()
}

// Drain runs w, a worker over b with its handlers registered, as
// RunReady does, then moves b's clock to the end of the next wait onto a
// queue w handles (a retry, a deferral, a delayed enqueue) and runs w
// again, until no such wait is left, and returns the outcome of every run
// as RunReady does: a job retried to its dead letter or
// deferred until it is done, in milliseconds. A schedule's ticks fire as
// the clock passes them, but Drain does not move the clock for them: tick
// a schedule with b.Clock().Advance. Drain fails t when the clock was
// moved DrainSteps times and a wait is still left, and as RunReady does.
func Drain(t testing.TB, b *Backend, w *runtime.Worker) []Outcome {
	t.Helper()
	for step := 0; ; step++ {
		b.settle(t, w)
		next, ok := b.nextWait(t, w.Queues())
		if !ok {
			return b.newOutcomes()
		}
		if step == DrainSteps {
			t.Fatalf("queueytest: a wait is still left after the clock moved %d times (a job deferred or retried without end?); the next ends at %v", DrainSteps, next)
		}
		b.clock.fake.Set(next)
	}
}

// running is a worker that RunReady or Drain started.
type running struct {
	cancel context.CancelFunc
	errc   chan error // Run's error, once it returns
	failed bool       // that error failed a test already
}

// settle starts w unless it runs already, and waits until it has nothing
// ready or running and its schedules wait for their ticks.
func (b *Backend) settle(t testing.TB, w *runtime.Worker) {
	t.Helper()
	r := b.start(w)
	queues := w.Queues()
	// The schedules are looked at first: while each waits for its tick,
	// none can enqueue a job behind drained's back.
	deadline := time.NewTimer(DrainTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(time.Millisecond) // schedules do not notify
	defer poll.Stop()
	for !schedulesWaiting(w) || !b.drained(queues) {
		select {
		case <-b.changed:
		case <-poll.C:
		case err := <-r.errc:
			r.errc <- err // for the test's cleanup
			b.mu.Lock()
			r.failed = true
			b.mu.Unlock()
			t.Fatalf("queueytest: worker stopped while draining: %v", err)
		case <-deadline.C:
			t.Fatalf("queueytest: queues still busy after %v", DrainTimeout)
		}
	}
}

// start runs w unless it runs already, until the test that made b ends.
func (b *Backend) start(w *runtime.Worker) *running {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.workers[w]; ok {
		return r
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, errc: make(chan error, 1)}
	b.workers[w] = r
	go func() { r.errc <- w.Run(ctx) }()
	b.cleanup(func() {
		cancel()
		select {
		case err := <-r.errc:
			b.mu.Lock()
			failed := r.failed
			b.mu.Unlock()
			if err != nil && !failed {
				b.t.Errorf("queueytest: worker Run: %v", err)
			}
		case <-time.After(DrainTimeout):
			b.t.Errorf("queueytest: worker did not stop within %v", DrainTimeout)
		}
	})
	return r
}

// schedulesWaiting reports whether each of w's schedules waits for its
// next tick.
func schedulesWaiting(w *runtime.Worker) bool {
	waiting, total := runtime.Hooks(hooks.K).Schedules(w)
	return waiting >= total
}

// nextWait returns when the first wait onto one of queues ends.
func (b *Backend) nextWait(t testing.TB, queues []runtime.QueueConfig) (time.Time, bool) {
	t.Helper()
	names := make([]admin.Queue, len(queues))
	for i, q := range queues {
		names[i] = admin.Queue{Name: q.Name}
	}
	stats, err := b.QueueStats(context.Background(), names...)
	if err != nil {
		t.Fatalf("queueytest: %v", err)
	}
	var next time.Time
	for _, st := range stats {
		for _, h := range st.Holds {
			if !h.NextReleaseBy.IsZero() && (next.IsZero() || h.NextReleaseBy.Before(next)) {
				next = h.NextReleaseBy
			}
		}
	}
	return next, !next.IsZero()
}

// newOutcomes returns the outcomes recorded since it last returned.
func (b *Backend) newOutcomes() []Outcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := slices.Clone(b.outcomes[b.returned:])
	b.returned = len(b.outcomes)
	return out
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
