package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// wantDeadBetween fails t unless letter d says it was dead-lettered, in
// UTC, between before and after.
func wantDeadBetween(t *testing.T, d admin.DeadLetterInfo, before, after time.Time) {
	t.Helper()
	at := d.DeadLetteredAt
	if at.IsZero() || at.Location() != time.UTC || at.Before(before) || at.After(after) {
		t.Errorf("letter %s (poison %v) dead-lettered at %v, want a UTC time between %v and %v", d.ID, d.Poison, at, before, after)
	}
}

// testDeadLetteredAt: a letter records when it was dead-lettered, whether
// its handler failed for good or it was poison; the time stays as it is
// while the letter is read, and a re-driven job that dies again records
// its new death.
func testDeadLetteredAt(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	in, ad := h.admin()
	before := time.Now()
	id := h.enqueue(job{N: 1, Text: "doomed"})
	h.publishRaw([]byte("not an envelope"))
	h.start(func(ctx context.Context, j job) error {
		return runtime.Permanent(errors.New("card declined"))
	})
	eventually(t, "the job and the poison message dead", func() bool { return h.stats().Dead == 2 })
	after := time.Now()
	letters := h.deadLetters(2)
	var died time.Time
	for _, d := range letters {
		wantDeadBetween(t, d, before, after)
		if d.ID == id {
			died = d.DeadLetteredAt
		}
	}
	if died.IsZero() {
		t.Fatalf("no letter of job %s among %+v", id, letters)
	}
	if one, err := in.DeadLetter(ctxT(t), h.q.Name, id); err != nil || !one.DeadLetteredAt.Equal(died) {
		t.Errorf("DeadLetter(%s) = dead-lettered at %v (%v), want %v as the list said", id, one.DeadLetteredAt, err, died)
	}

	redriven := time.Now()
	res, err := ad.RedriveDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{IDs: []string{id}}, nil)
	if err != nil || len(res.Moved) != 1 {
		t.Fatalf("re-drive of %s = %+v, %v; want it moved", id, res, err)
	}
	var again admin.DeadLetterInfo
	eventually(t, "the re-driven job dead again", func() bool {
		again, err = in.DeadLetter(ctxT(t), h.q.Name, id)
		return err == nil && again.Headers[admin.HeaderRedrives] == "1"
	})
	wantDeadBetween(t, again, redriven, time.Now())
}
