package queueytest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

// signUp is the code under test: it enqueues a welcome email.
func signUp(ctx context.Context, p *runtime.Producer, addr string) error {
	_, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: addr, Subject: "Welcome"},
		runtime.WithID("welcome-"+addr),
		runtime.WithPriority(5),
		runtime.WithDelay(time.Minute),
		runtime.WithHeaders(map[string]string{"tenant": "acme"}),
	)
	return err
}

// Assert on what the code under test enqueued, then run a worker until the
// queues are drained, waits included, and look at each run's outcome.
func Example() {
	// In a test, t is the test's *testing.T.
	t := &testing.T{}
	ctx := context.Background()

	b := queueytest.New(t, emails.Queues()...)
	if err := signUp(ctx, runtime.NewProducerUndeclared(b), "ada@example.com"); err != nil {
		fmt.Println(err)
	}
	// Exactly one job on the queue, with these options; it fails the test
	// with every job of the queue and its options listed otherwise.
	sent := queueytest.RequireEnqueued(t, b, emails.SendEmailJob,
		queueytest.WithPriority(5), queueytest.WithDelay(time.Minute), queueytest.WithHeader("tenant", "acme"))
	fmt.Println(sent.ID, sent.Job.To, sent.Job.Subject, sent.Priority, sent.Delay, sent.Headers["tenant"])
	queueytest.RequireNotEnqueued(t, b, emails.ChargeCardJob)

	// Drain runs each job to its end: a failure is retried after its wait
	// on the test clock, which Drain moves, until the last attempt.
	p, _ := runtime.NewProducer(ctx, b, emails.Queues()...)
	_, _ = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c1", Cents: 500}, runtime.WithID("charge-1"))
	_, _ = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c2", Cents: -1}, runtime.WithID("charge-2"))

	w := runtime.NewWorker(b)
	defer w.Stop(ctx) // in a test, the worker stops when the test ends
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		if job.Cents < 0 {
			return fmt.Errorf("gateway refused %d cents", job.Cents)
		}
		return nil
	})
	outcomes := queueytest.Drain(t, b, w)
	// Two handlers run at once (concurrency=2): order by ID to print.
	slices.SortStableFunc(outcomes, func(a, b queueytest.Outcome) int { return strings.Compare(a.ID, b.ID) })
	for _, o := range outcomes {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s attempt %d: %s %v %s", o.ID, o.Attempt, o.Result, o.Delay, o.Reason)))
	}
	// Output:
	// welcome-ada@example.com ada@example.com Welcome 5 1m0s acme
	// charge-1 attempt 1: done 0s
	// charge-2 attempt 1: retried 1s gateway refused -1 cents
	// charge-2 attempt 2: retried 2s gateway refused -1 cents
	// charge-2 attempt 3: retried 4s gateway refused -1 cents
	// charge-2 attempt 4: retried 8s gateway refused -1 cents
	// charge-2 attempt 5: dead-lettered 0s gateway refused -1 cents
}
