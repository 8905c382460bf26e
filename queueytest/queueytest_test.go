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
	t.Parallel()
	ctx := context.Background()
	b := queueytest.New(t)
	p, err := qruntime.NewProducer(ctx, b, emails.Queues()...)
	if err != nil {
		t.Fatal(err)
	}
	id, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: "a@b.c", Body: "hi"}, qruntime.WithPriority(7), qruntime.WithDelay(1500*time.Millisecond),
		qruntime.WithHeaders(map[string]string{"traceparent": "00-1", "tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	got := queueytest.RequireEnqueued(t, b, emails.SendEmailJob,
		queueytest.WithID(id), queueytest.WithPriority(7), queueytest.WithDelay(1500*time.Millisecond), queueytest.WithHeader("traceparent", "00-1"))
	if got.ID != id || got.Job != (emails.SendEmail{To: "a@b.c", Body: "hi"}) || got.Priority != 7 || got.Delay != 1500*time.Millisecond ||
		got.Headers["traceparent"] != "00-1" || got.Queue != emails.SendEmailQueue.Name || got.EnqueuedAt.IsZero() {
		t.Errorf("RequireEnqueued = %+v, want job %s with its options", got, id)
	}

	// Options that do not match: each difference, then what was enqueued.
	msg := failure(func(tb testing.TB) {
		queueytest.RequireEnqueued(tb, b, emails.SendEmailJob, queueytest.WithID(id), queueytest.WithPriority(3), queueytest.WithDelay(time.Minute),
			queueytest.WithHeader("tenant", "globex"), queueytest.WithHeader("region", "eu"))
	})
	want := fmt.Sprintf(`queueytest: the job enqueued onto queue "emails.send_email" has priority 7, want 3; has delay 1.5s, want 1m0s; has no header "region", want "eu"; has header tenant="acme", want "globex"
enqueued onto "emails.send_email":
  1. ID %q, priority 7, delay 1.5s, headers tenant="acme" traceparent="00-1"`, id)
	if msg != want {
		t.Errorf("options not matched:\n got %s\nwant %s", msg, want)
	}
	t.Logf("the failure of options not matched:\n%s", msg)

	// Several jobs: each must match.
	if _, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: "d@e.f"}, qruntime.WithID("second"), qruntime.WithPriority(7)); err != nil {
		t.Fatal(err)
	}
	if jobs := queueytest.RequireEnqueuedN(t, b, emails.SendEmailJob, 2, queueytest.WithPriority(7)); jobs[1].Job.To != "d@e.f" {
		t.Errorf("RequireEnqueuedN: %+v", jobs)
	}
	msg = failure(func(tb testing.TB) {
		queueytest.RequireEnqueuedN(tb, b, emails.SendEmailJob, 2, queueytest.WithDelay(1500*time.Millisecond))
	})
	if !strings.HasPrefix(msg, `queueytest: job 2 of 2 enqueued onto queue "emails.send_email" has delay 0s, want 1.5s`+"\n") || !strings.Contains(msg, `2. ID "second", priority 7, delay 0s`) {
		t.Errorf("one of two not matched: %q", msg)
	}
}

func TestRequireFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := queueytest.New(t, emails.Queues()...)
	p := qruntime.NewProducerUndeclared(b)
	msg := failure(func(tb testing.TB) { queueytest.RequireEnqueued(tb, b, emails.SendEmailJob) })
	if want := `queueytest: no job enqueued onto queue "emails.send_email", want 1; nothing was enqueued through this backend`; msg != want {
		t.Errorf("nothing enqueued:\n got %q\nwant %q", msg, want)
	}
	for i := range 2 {
		if _, err := emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c"}, qruntime.WithID(fmt.Sprint("c", i))); err != nil {
			t.Fatal(err)
		}
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireEnqueued(tb, b, emails.SendEmailJob) })
	if want := `queueytest: no job enqueued onto queue "emails.send_email", want 1; enqueued: 2 onto "billing.charge_card"`; msg != want {
		t.Errorf("other queue:\n got %q\nwant %q", msg, want)
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireEnqueued(tb, b, emails.ChargeCardJob) })
	if want := `queueytest: 2 jobs enqueued onto queue "billing.charge_card", want 1
enqueued onto "billing.charge_card":
  1. ID "c0", priority 0, delay 0s
  2. ID "c1", priority 0, delay 0s`; msg != want {
		t.Errorf("two jobs:\n got %q\nwant %q", msg, want)
	}
	if jobs := queueytest.RequireEnqueuedN(t, b, emails.ChargeCardJob, 2); len(jobs) != 2 {
		t.Errorf("RequireEnqueuedN returned %d jobs, want 2", len(jobs))
	}
	msg = failure(func(tb testing.TB) { queueytest.RequireNotEnqueued(tb, b, emails.ChargeCardJob) })
	if !strings.HasPrefix(msg, `queueytest: 2 job(s) enqueued onto queue "billing.charge_card", want none`+"\n"+`enqueued onto "billing.charge_card":`) {
		t.Errorf("RequireNotEnqueued: %q", msg)
	}
	// Asserting with the wrong queue config: another kind.
	wrong := emails.ChargeCardQueue
	wrong.Kind = "emails.SendEmail"
	msg = failure(func(tb testing.TB) {
		queueytest.RequireEnqueuedN(tb, b, qruntime.Job[emails.SendEmail]{Queue: wrong}, 2)
	})
	if !strings.Contains(msg, `on queue "billing.charge_card" is of kind "emails.ChargeCard", want "emails.SendEmail"`) {
		t.Errorf("wrong kind: %q", msg)
	}
}

// TestDrainOutcomes: Drain runs every queue the worker handles until none
// is busy, including a job one handler enqueues onto another queue, and
// reports each run's outcome.
func TestDrainOutcomes(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
