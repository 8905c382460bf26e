package backendtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// testWrongKind: a job whose envelope names another kind than the queue's
// handler takes (another job type enqueued onto this queue name) is
// dead-lettered with a reason naming both kinds and the queue, and the
// handler never runs on it; a job of the right kind behind it runs.
func testWrongKind(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	alien := &runtime.Envelope{ID: "alien", Queue: h.q.Name, Kind: "other.Job", Payload: []byte{0x80}, Attempt: 1, MaxAttempts: 5, EnqueuedAt: time.Now()}
	if err := h.b.Publish(ctxT(t), alien, 0); err != nil {
		t.Fatalf("publish a job of another kind: %v", err)
	}
	id := h.enqueue(job{N: 1})
	runs := make(chan run, 2)
	h.start(func(ctx context.Context, j job) error { runs <- runOf(ctx, j); return nil })
	if r := recv(t, runs, "the job of the right kind"); r.Info.ID != id {
		t.Fatalf("handler ran job %s, want only %s", r.Info.ID, id)
	}
	dl := h.deadLetters(1)
	if dl[0].Poison || dl[0].ID != "alien" {
		t.Fatalf("dead letter %+v, want job alien", dl[0])
	}
	want := fmt.Sprintf(`job of kind "other.Job" on queue %q, whose handler takes "backendtest.job": dead-lettered without running the handler`, h.q.Name)
	wantContains(t, dl[0].Reason, want, "dead-letter reason")
	select {
	case r := <-runs:
		t.Errorf("handler ran job %s too", r.Info.ID)
	default:
	}
}

// testKindConflict: declaring a queue name, through the backend it was
// declared on, for another job kind is refused, naming both kinds.
func testKindConflict(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	other := h.q
	other.Kind = "other.Job"
	_, err := runtime.NewProducer(ctxT(t), h.b, other)
	wantErrIs(t, err, runtime.ErrKindConflict, "declare for another kind")
	want := fmt.Sprintf("queue %q is declared for backendtest.job jobs and now for other.Job jobs", h.q.Name)
	wantContains(t, err.Error(), want, "error")
	same := h.q
	same.Kind = ""
	if _, err := runtime.NewProducer(ctxT(t), h.b, same); err != nil {
		t.Errorf("declare without a kind (any): %v", err)
	}
	if _, err := runtime.NewProducer(ctxT(t), h.b, other); err == nil {
		t.Errorf("declare for another kind after one without a kind succeeded")
	}
}

// invoice is a job type of its own, enqueued under a queue name declared
// for job.
type invoice struct {
	Cents int
}

// testEnqueueKindConflict: a job of another type enqueued under a queue name
// this producer declared for job is refused with ErrKindConflict, naming
// both kinds, before anything is published; a job type given for a config
// of another kind is refused with ErrJobType; jobs of the right kind are
// handled as before.
func testEnqueueKindConflict(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		runs <- runOf(ctx, j)
		return nil
	})
	other := h.q
	other.Kind = runtime.KindOf[invoice]()
	_, err := runtime.Enqueue(ctxT(t), h.p, other, invoice{Cents: 100})
	wantErrIs(t, err, runtime.ErrKindConflict, "enqueue of another kind under a declared name")
	wantContains(t, err.Error(), "backendtest.job", "error")
	wantContains(t, err.Error(), "backendtest.invoice", "error")
	_, err = runtime.Enqueue(ctxT(t), h.p, h.q, invoice{Cents: 100})
	wantErrIs(t, err, runtime.ErrJobType, "enqueue of an invoice with the job queue's config")
	_, err = runtime.EnqueueMany(ctxT(t), h.p, h.q, []invoice{{Cents: 1}})
	wantErrIs(t, err, runtime.ErrJobType, "enqueue many invoices with the job queue's config")
	h.enqueue(job{N: 7})
	if r := recv(t, runs, "the job of the right kind"); r.N != 7 {
		t.Fatalf("ran job %d, want 7", r.N)
	}
	select {
	case r := <-runs:
		t.Errorf("handler ran %+v too: a refused enqueue was published", r)
	case <-time.After(200 * time.Millisecond): // a window for a stray run, not a synchronisation
	}
}
