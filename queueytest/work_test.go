package queueytest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/queueytest"
	qruntime "github.com/queuey/queuey/runtime"
)

// TestWork: one worker runs one job at a time at any attempt, through its
// middleware, and can be drained afterwards.
func TestWork(t *testing.T) {
	t.Parallel()
	w := qruntime.NewWorker(queueytest.New(t))
	var wrapped atomic.Int32
	w.Use(func(next qruntime.HandlerFunc) qruntime.HandlerFunc {
		return func(ctx context.Context, env *qruntime.Envelope) error {
			wrapped.Add(1)
			return next(ctx, env)
		}
	})
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		info, _ := qruntime.InfoFromContext(ctx)
		switch {
		case job.Cents < 0:
			return qruntime.Permanent(errors.New("negative"))
		case job.Cents > 10_000:
			return qruntime.Defer(90 * time.Second)
		case job.CustomerID == "flaky" && info.Attempt < 3:
			return errors.New("gateway down")
		case job.CustomerID == "slow":
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	flaky := emails.ChargeCard{CustomerID: "flaky", Cents: 1}
	for _, c := range []struct {
		job  emails.ChargeCard
		opts []queueytest.WorkOption
		want queueytest.Outcome
	}{
		{flaky, nil, queueytest.Outcome{Attempt: 1, Result: queueytest.Retried, Delay: time.Second, Reason: "gateway down"}},
		{flaky, []queueytest.WorkOption{queueytest.Attempt(2, 5)}, queueytest.Outcome{Attempt: 2, Result: queueytest.Retried, Delay: 2 * time.Second, Reason: "gateway down"}},
		{flaky, []queueytest.WorkOption{queueytest.Attempt(2, 2)}, queueytest.Outcome{Attempt: 2, Result: queueytest.DeadLettered, Reason: "gateway down"}},
		{flaky, []queueytest.WorkOption{queueytest.Attempt(3, 5)}, queueytest.Outcome{Attempt: 3, Result: queueytest.Done}},
		{emails.ChargeCard{Cents: -1}, nil, queueytest.Outcome{Attempt: 1, Result: queueytest.DeadLettered, Reason: "permanent: negative"}},
		{emails.ChargeCard{Cents: 20_000}, nil, queueytest.Outcome{Attempt: 1, Result: queueytest.Deferred, Delay: 90 * time.Second}},
	} {
		got := queueytest.Work(t, w, emails.ChargeCardJob, c.job, c.opts...)
		if !strings.HasPrefix(got.ID, "work-") || got.Queue != emails.ChargeCardQueue.Name || got.Kind != emails.ChargeCardQueue.Kind {
			t.Errorf("Work(%+v): job %s on %q of kind %q", c.job, got.ID, got.Queue, got.Kind)
		}
		got.ID, got.Queue, got.Kind = "", "", ""
		if got != c.want {
			t.Errorf("Work(%+v, %d options) = %+v, want %+v", c.job, len(c.opts), got, c.want)
		}
	}
	if n := wrapped.Load(); n != 6 {
		t.Errorf("middleware ran %d times, want 6", n)
	}

	// The queue's timeout applies: a handler that outlives it fails.
	slow := emails.SendEmailQueue
	slow.Timeout = time.Millisecond
	ws := qruntime.NewWorker(queueytest.New(t))
	qruntime.Handle(ws, slow, func(ctx context.Context, job emails.SendEmail) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if got := queueytest.Work(t, ws, qruntime.Job[emails.SendEmail]{Queue: slow}, emails.SendEmail{}); got.Result != queueytest.Retried || got.Reason != "context deadline exceeded" {
		t.Errorf("past the timeout: %+v, want retried with the deadline", got)
	}

	msg := failure(func(tb testing.TB) { queueytest.Work(tb, w, emails.SendEmailJob, emails.SendEmail{}) })
	if !strings.Contains(msg, `no handler for queue "emails.send_email"`) {
		t.Errorf("no handler: %q", msg)
	}

	// Work did not start w: Drain runs it now.
	b := queueytest.New(t, emails.Queues()...)
	w2 := qruntime.NewWorker(b)
	emails.HandleSendEmail(w2, func(ctx context.Context, job emails.SendEmail) error { return nil })
	queueytest.Work(t, w2, emails.SendEmailJob, emails.SendEmail{})
	if _, err := emails.EnqueueSendEmail(context.Background(), qruntime.NewProducerUndeclared(b), emails.SendEmail{}); err != nil {
		t.Fatal(err)
	}
	if got := queueytest.Drain(t, b, w2); len(got) != 1 || got[0].Result != queueytest.Done {
		t.Errorf("Drain after Work = %+v", got)
	}
}
