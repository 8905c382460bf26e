package queueytest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/queueytest"
	qruntime "github.com/queuey/queuey/runtime"
)

// fakeT records a Require function's failure; Fatalf ends the goroutine
// as testing.T's does.
type fakeT struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// failure runs fn with a fakeT and returns its failure message, "" when it
// passed.
func failure(fn func(tb testing.TB)) string {
	f := &fakeT{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f.msg
}

func TestRequireEnqueuedOptions(t *testing.T) {
	ctx := context.Background()
	b := queueytest.New(t)
	p, err := qruntime.NewProducer(ctx, b, emails.Queues()...)
	if err != nil {
		t.Fatal(err)
	}
	id, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: "a@b.c", Body: "hi"}, qruntime.WithPriority(7), qruntime.WithDelay(1500*time.Millisecond),
		qruntime.WithHeaders(map[string]string{"traceparent": "00-1"}))
	if err != nil {
		t.Fatal(err)
	}
	got := queueytest.RequireEnqueued[emails.SendEmail](t, b, emails.SendEmailQueue)
	if got.ID != id || got.Job != (emails.SendEmail{To: "a@b.c", Body: "hi"}) || got.Priority != 7 || got.Delay != 1500*time.Millisecond ||
		got.Headers["traceparent"] != "00-1" || got.Queue != emails.SendEmailQueue.Name || got.EnqueuedAt.IsZero() {
		t.Errorf("RequireEnqueued = %+v, want job %s with its options", got, id)
	}
}

func TestRequireFailures(t *testing.T) {
	ctx := context.Background()
	b := queueytest.New(t, emails.Queues()...)
	p := qruntime.NewProducerUndeclared(b)

	msg := failure(func(tb testing.TB) { queueytest.RequireEnqueued[emails.SendEmail](tb, b, emails.SendEmailQueue) })
	if want := `queueytest: no job enqueued onto queue "emails.send_email"; nothing was enqueued through this backend`; msg != want {
		t.Errorf("nothing enqueued:\n got %q\nwant %q", msg, want)
	}
	for range 2 {
		if _, err := emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireEnqueued[emails.SendEmail](tb, b, emails.SendEmailQueue) })
	if want := `queueytest: no job enqueued onto queue "emails.send_email"; enqueued: 2 onto "billing.charge_card"`; msg != want {
		t.Errorf("other queue:\n got %q\nwant %q", msg, want)
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireEnqueued[emails.ChargeCard](tb, b, emails.ChargeCardQueue) })
	if want := `queueytest: 2 jobs enqueued onto queue "billing.charge_card", want exactly one (RequireManyEnqueued returns them all)`; msg != want {
		t.Errorf("two jobs:\n got %q\nwant %q", msg, want)
	}
	if jobs := queueytest.RequireManyEnqueued[emails.ChargeCard](t, b, emails.ChargeCardQueue); len(jobs) != 2 {
		t.Errorf("RequireManyEnqueued returned %d jobs, want 2", len(jobs))
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireNotEnqueued(tb, b, emails.ChargeCardQueue) })
	if !strings.HasPrefix(msg, `queueytest: 2 job(s) enqueued onto queue "billing.charge_card", want none; the first is `) {
		t.Errorf("RequireNotEnqueued: %q", msg)
	}
	// Asserting with the wrong queue config: another kind.
	wrong := emails.ChargeCardQueue
	wrong.Kind = "emails.SendEmail"
	msg = failure(func(tb testing.TB) { queueytest.RequireManyEnqueued[emails.SendEmail](tb, b, wrong) })
	if !strings.Contains(msg, `on queue "billing.charge_card" is of kind "emails.ChargeCard", want "emails.SendEmail"`) {
		t.Errorf("wrong kind: %q", msg)
	}
}

// TestDrainOutcomes: Drain runs every queue the worker handles until none
// is busy, including a job one handler enqueues onto another queue, and
// reports each run's outcome.
func TestDrainOutcomes(t *testing.T) {
	ctx := context.Background()
	b := queueytest.New(t)
	p, err := qruntime.NewProducer(ctx, b, emails.Queues()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []emails.ChargeCard{{CustomerID: "ok", Cents: 1}, {CustomerID: "fails"}, {CustomerID: "bad"}, {CustomerID: "later"}} {
		if _, err := emails.EnqueueChargeCard(ctx, p, c, qruntime.WithID(c.CustomerID)); err != nil {
			t.Fatal(err)
		}
	}
	w := qruntime.NewWorker(b)
	var deferred atomic.Bool
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		switch job.CustomerID {
		case "fails":
			return errors.New("gateway down")
		case "bad":
			return qruntime.Permanent(errors.New("card blocked"))
		case "later":
			if !deferred.Swap(true) {
				return qruntime.Defer(0)
			}
		}
		_, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: job.CustomerID}, qruntime.WithID("receipt-"+job.CustomerID))
		return err
	})
	emails.HandleSendEmail(w, func(ctx context.Context, job emails.SendEmail) error { return nil })

	got := queueytest.Drain(t, b, w)
	slices.SortStableFunc(got, func(a, b queueytest.Outcome) int { return strings.Compare(a.ID, b.ID) })
	const card, kind = "billing.charge_card", "emails.ChargeCard"
	want := []queueytest.Outcome{
		{ID: "bad", Queue: card, Kind: kind, Attempt: 1, Result: queueytest.DeadLettered, Reason: "permanent: card blocked"},
		{ID: "fails", Queue: card, Kind: kind, Attempt: 1, Result: queueytest.Retried, Delay: time.Second, Reason: "gateway down"},
		{ID: "fails", Queue: card, Kind: kind, Attempt: 2, Result: queueytest.Retried, Delay: 2 * time.Second, Reason: "gateway down"},
		{ID: "fails", Queue: card, Kind: kind, Attempt: 3, Result: queueytest.Retried, Delay: 4 * time.Second, Reason: "gateway down"},
		{ID: "fails", Queue: card, Kind: kind, Attempt: 4, Result: queueytest.Retried, Delay: 8 * time.Second, Reason: "gateway down"},
		{ID: "fails", Queue: card, Kind: kind, Attempt: 5, Result: queueytest.DeadLettered, Reason: "gateway down"},
		{ID: "later", Queue: card, Kind: kind, Attempt: 1, Result: queueytest.Deferred, Delay: time.Second},
		{ID: "later", Queue: card, Kind: kind, Attempt: 1, Result: queueytest.Done},
		{ID: "ok", Queue: card, Kind: kind, Attempt: 1, Result: queueytest.Done},
		{ID: "receipt-later", Queue: "emails.send_email", Kind: "emails.SendEmail", Attempt: 1, Result: queueytest.Done},
		{ID: "receipt-ok", Queue: "emails.send_email", Kind: "emails.SendEmail", Attempt: 1, Result: queueytest.Done},
	}
	if !slices.Equal(got, want) {
		t.Errorf("outcomes:\n got %+v\nwant %+v", got, want)
	}
}

// TestDrainNothing: with nothing enqueued, Drain returns no outcome once
// the worker consumes its queues.
func TestDrainNothing(t *testing.T) {
	b := queueytest.New(t)
	w := qruntime.NewWorker(b)
	emails.HandleSendEmail(w, func(ctx context.Context, job emails.SendEmail) error { return nil })
	if got := queueytest.Drain(t, b, w); len(got) != 0 {
		t.Errorf("Drain = %+v, want no outcome", got)
	}
}

// TestBackendCloses: the Backend is a runtime.Backend whose Close, part of
// that interface, ends what it holds; a second Close is harmless.
func TestBackendCloses(t *testing.T) {
	var b qruntime.Backend = queueytest.New(t, emails.Queues()...)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := b.Declare(context.Background(), emails.SendEmailQueue); !errors.Is(err, qruntime.ErrClosed) {
		t.Errorf("Declare after Close = %v, want ErrClosed", err)
	}
}
