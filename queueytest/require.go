package queueytest

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/runtime"
)

// Enqueued is a job recorded by a Backend, decoded into its struct, with
// the options it was enqueued with.
type Enqueued[T any] struct {
	// Job is the job, decoded from its payload as a handler gets it.
	Job T
	// ID is the job's ID: WithID's, or the one generated.
	ID string
	// Queue is the queue it was enqueued onto.
	Queue string
	// Priority is WithPriority's value, 0 by default.
	Priority int
	// Delay is WithDelay's value as given, 0 by default. The backend
	// rounds it up to the granularity (1s).
	Delay time.Duration
	// Headers are WithHeaders' values, nil when none were given.
	Headers map[string]string
	// EnqueuedAt is when the job was enqueued.
	EnqueuedAt time.Time
}

// RequireEnqueued fails t unless exactly one job was enqueued onto q
// through b, and that job is of q's kind, and returns it decoded into a T.
// T is the job's struct: RequireEnqueued[emails.SendEmail](t, b,
// emails.SendEmailQueue).
func RequireEnqueued[T any](t testing.TB, b *Backend, q runtime.QueueConfig) Enqueued[T] {
	t.Helper()
	jobs := RequireManyEnqueued[T](t, b, q)
	if len(jobs) != 1 {
		t.Fatalf("queueytest: %d jobs enqueued onto queue %q, want exactly one (RequireManyEnqueued returns them all)", len(jobs), q.Name)
	}
	return jobs[0]
}

// RequireManyEnqueued fails t unless at least one job was enqueued onto q
// through b, every one of q's kind, and returns them in enqueue order,
// decoded into T.
func RequireManyEnqueued[T any](t testing.TB, b *Backend, q runtime.QueueConfig) []Enqueued[T] {
	t.Helper()
	recs := b.records(q.Name)
	if len(recs) == 0 {
		t.Fatalf("queueytest: no job enqueued onto queue %q; %s", q.Name, b.summary())
	}
	out := make([]Enqueued[T], len(recs))
	for i, r := range recs {
		if q.Kind != "" && r.env.Kind != q.Kind {
			t.Fatalf("queueytest: job %s on queue %q is of kind %q, want %q", r.env.ID, q.Name, r.env.Kind, q.Kind)
		}
		var job T
		if err := msgpack.Unmarshal(r.env.Payload, &job); err != nil {
			t.Fatalf("queueytest: job %s on queue %q does not decode into %T: %v", r.env.ID, q.Name, job, err)
		}
		out[i] = Enqueued[T]{
			Job:        job,
			ID:         r.env.ID,
			Queue:      r.env.Queue,
			Priority:   int(r.env.Priority),
			Delay:      r.delay,
			Headers:    maps.Clone(r.env.Headers),
			EnqueuedAt: r.env.EnqueuedAt,
		}
	}
	return out
}

// RequireNotEnqueued fails t if any job was enqueued onto q through b.
func RequireNotEnqueued(t testing.TB, b *Backend, q runtime.QueueConfig) {
	t.Helper()
	if recs := b.records(q.Name); len(recs) > 0 {
		t.Fatalf("queueytest: %d job(s) enqueued onto queue %q, want none; the first is %s", len(recs), q.Name, recs[0].env.ID)
	}
}

// summary says what was enqueued through b, by queue, for failure
// messages.
func (b *Backend) summary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.enqueued) == 0 {
		return "nothing was enqueued through this backend"
	}
	var order []string
	n := map[string]int{}
	for _, r := range b.enqueued {
		if n[r.env.Queue] == 0 {
			order = append(order, r.env.Queue)
		}
		n[r.env.Queue]++
	}
	parts := make([]string, len(order))
	for i, name := range order {
		parts[i] = fmt.Sprintf("%d onto %q", n[name], name)
	}
	return "enqueued: " + strings.Join(parts, ", ")
}
