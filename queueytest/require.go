package queueytest

import (
	"fmt"
	"maps"
	"slices"
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

// EnqueuedOption is what RequireEnqueued and RequireEnqueuedN require of
// the options a job was enqueued with, beside its queue.
type EnqueuedOption func(*expect)

// expect is what the EnqueuedOptions of one call require.
type expect struct {
	id       *string
	priority *int
	delay    *time.Duration
	headers  map[string]string
}

// WithID requires the job's ID to be id.
func WithID(id string) EnqueuedOption {
	return func(e *expect) { e.id = &id }
}

// WithPriority requires the job to have been enqueued with priority p
// (0 when it was given none).
func WithPriority(p int) EnqueuedOption {
	return func(e *expect) { e.priority = &p }
}

// WithDelay requires the job to have been enqueued with delay d, as
// given to runtime.WithDelay (0 when it was given none).
func WithDelay(d time.Duration) EnqueuedOption {
	return func(e *expect) { e.delay = &d }
}

// WithHeader requires the job to carry header key with value; its other
// headers are not looked at.
func WithHeader(key, value string) EnqueuedOption {
	return func(e *expect) {
		if e.headers == nil {
			e.headers = map[string]string{}
		}
		e.headers[key] = value
	}
}

// RequireEnqueued fails t unless exactly one job was enqueued onto job's
// queue through b, of its kind and with the options opts require, and
// returns it decoded: RequireEnqueued(t, b, emails.SendEmailJob,
// queueytest.WithPriority(5)). A failure lists every job enqueued onto the
// queue, with its options.
func RequireEnqueued[T any](t testing.TB, b *Backend, job runtime.Job[T], opts ...EnqueuedOption) Enqueued[T] {
	t.Helper()
	return RequireEnqueuedN(t, b, job, 1, opts...)[0]
}

// RequireEnqueuedN fails t unless exactly n jobs (n > 0) were enqueued
// onto job's queue through b, each of its kind and with the options opts
// require, and returns them decoded, in enqueue order. A failure lists
// every job enqueued onto the queue, with its options.
func RequireEnqueuedN[T any](t testing.TB, b *Backend, job runtime.Job[T], n int, opts ...EnqueuedOption) []Enqueued[T] {
	t.Helper()
	q := job.Queue
	if n <= 0 {
		t.Fatalf("queueytest: RequireEnqueuedN of queue %q with n=%d: n must be at least 1 (RequireNotEnqueued wants none)", q.Name, n)
	}
	var want expect
	for _, opt := range opts {
		opt(&want)
	}
	recs := b.records(q.Name)
	switch {
	case len(recs) == 0:
		t.Fatalf("queueytest: no job enqueued onto queue %q, want %d; %s", q.Name, n, b.summary())
	case len(recs) != n:
		t.Fatalf("queueytest: %d jobs enqueued onto queue %q, want %d\n%s", len(recs), q.Name, n, listRecords(q.Name, recs))
	}
	out := make([]Enqueued[T], len(recs))
	for i, r := range recs {
		if q.Kind != "" && r.env.Kind != q.Kind {
			t.Fatalf("queueytest: job %s on queue %q is of kind %q, want %q", r.env.ID, q.Name, r.env.Kind, q.Kind)
		}
		if diff := want.diff(r); diff != "" {
			what := "the job"
			if n > 1 {
				what = fmt.Sprintf("job %d of %d", i+1, n)
			}
			t.Fatalf("queueytest: %s enqueued onto queue %q %s\n%s", what, q.Name, diff, listRecords(q.Name, recs))
		}
		var j T
		if err := msgpack.Unmarshal(r.env.Payload, &j); err != nil {
			t.Fatalf("queueytest: job %s on queue %q does not decode into %T: %v", r.env.ID, q.Name, j, err)
		}
		out[i] = Enqueued[T]{
			Job:        j,
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

// RequireNotEnqueued fails t if any job was enqueued onto job's queue
// through b, and lists them.
func RequireNotEnqueued[T any](t testing.TB, b *Backend, job runtime.Job[T]) {
	t.Helper()
	if recs := b.records(job.Queue.Name); len(recs) > 0 {
		t.Fatalf("queueytest: %d job(s) enqueued onto queue %q, want none\n%s", len(recs), job.Queue.Name, listRecords(job.Queue.Name, recs))
	}
}

// diff says how r differs from what e requires: "" when it does not,
// else "has ID "a", want "b"; ...".
func (e expect) diff(r record) string {
	var d []string
	if e.id != nil && r.env.ID != *e.id {
		d = append(d, fmt.Sprintf("has ID %q, want %q", r.env.ID, *e.id))
	}
	if e.priority != nil && int(r.env.Priority) != *e.priority {
		d = append(d, fmt.Sprintf("has priority %d, want %d", r.env.Priority, *e.priority))
	}
	if e.delay != nil && r.delay != *e.delay {
		d = append(d, fmt.Sprintf("has delay %v, want %v", r.delay, *e.delay))
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		v, ok := r.env.Headers[k]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("has no header %q, want %q", k, e.headers[k]))
		case v != e.headers[k]:
			d = append(d, fmt.Sprintf("has header %s=%q, want %q", k, v, e.headers[k]))
		}
	}
	return strings.Join(d, "; ")
}

// listRecords lists recs, the jobs enqueued onto queue, one a line, with
// their options, for failure messages.
func listRecords(queue string, recs []record) string {
	var s strings.Builder
	fmt.Fprintf(&s, "enqueued onto %q:", queue)
	for i, r := range recs {
		fmt.Fprintf(&s, "\n  %d. ID %q, priority %d, delay %v", i+1, r.env.ID, r.env.Priority, r.delay)
		if len(r.env.Headers) > 0 {
			hs := make([]string, 0, len(r.env.Headers))
			for _, k := range slices.Sorted(maps.Keys(r.env.Headers)) {
				hs = append(hs, fmt.Sprintf("%s=%q", k, r.env.Headers[k]))
			}
			fmt.Fprintf(&s, ", headers %s", strings.Join(hs, " "))
		}
	}
	return s.String()
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
