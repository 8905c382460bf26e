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
// queues are drained and look at each job's outcome.
func Example() {
	// In a test, t is the test's *testing.T.
	t := &testing.T{}
	ctx := context.Background()

	b := queueytest.New(t, emails.Queues()...)
	if err := signUp(ctx, runtime.NewProducerUndeclared(b), "ada@example.com"); err != nil {
		fmt.Println(err)
	}
	sent := queueytest.RequireEnqueued[emails.SendEmail](t, b, emails.SendEmailQueue)
	fmt.Println(sent.ID, sent.Job.To, sent.Job.Subject, sent.Priority, sent.Delay, sent.Headers["tenant"])
	queueytest.RequireNotEnqueued(t, b, emails.ChargeCardQueue)

	// Jobs enqueued with no delay run at once; a failure is retried later.
	p, _ := runtime.NewProducer(ctx, b, emails.Queues()...)
	_, _ = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c1", Cents: 500}, runtime.WithID("charge-1"))
	_, _ = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: "c2", Cents: -1}, runtime.WithID("charge-2"))

	w := runtime.NewWorker(b)
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		if job.Cents < 0 {
			return fmt.Errorf("gateway refused %d cents", job.Cents)
		}
		return nil
	})
	outcomes := queueytest.Drain(t, b, w)
	// Two handlers run at once (concurrency=2): order by ID to print.
	slices.SortFunc(outcomes, func(a, b queueytest.Outcome) int { return strings.Compare(a.ID, b.ID) })
	for _, o := range outcomes {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s attempt %d: %s %v %s", o.ID, o.Attempt, o.Result, o.Delay, o.Reason)))
	}
	// Output:
	// welcome-ada@example.com ada@example.com Welcome 5 1m0s acme
	// charge-1 attempt 1: done 0s
	// charge-2 attempt 1: retried 1s gateway refused -1 cents
}
