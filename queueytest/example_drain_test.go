package queueytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

// Drain also runs the jobs that handlers enqueue, and the jobs that wait,
// moving the test clock to the end of each wait, and says what became of
// each run: a deferral with its wait, a dead letter with its reason.
func ExampleDrain() {
	// In a test, t is the test's *testing.T.
	t := &testing.T{}
	ctx := context.Background()
	b := queueytest.New(t, emails.Queues()...)
	p := runtime.NewProducerUndeclared(b)

	w := runtime.NewWorker(b)
	defer w.Stop(ctx) // in a test, the worker stops when the test ends
	limitResets := b.Clock().Now().Add(time.Minute)
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		switch {
		case job.Cents > 10_000 && b.Clock().Now().Before(limitResets):
			return runtime.Defer(time.Minute) // over the gateway's limit: later
		case job.Cents < 0:
			return runtime.Permanent(errors.New("negative amount"))
		}
		_, err := emails.EnqueueSendEmail(ctx, p, emails.SendEmail{To: job.CustomerID, Subject: "Receipt"},
			runtime.WithID("receipt-"+job.CustomerID))
		return err
	})
	emails.HandleSendEmail(w, func(ctx context.Context, job emails.SendEmail) error { return nil })

	for i, cents := range []int64{500, 20_000, -1} {
		_, _ = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: fmt.Sprint("c", i+1), Cents: cents},
			runtime.WithID(fmt.Sprint("charge-", i+1)))
	}
	for _, o := range queueytest.Drain(t, b, w) {
		fmt.Printf("%s attempt %d: %s, wait %v, reason %q\n", o.ID, o.Attempt, o.Result, o.Delay, o.Reason)
	}
	// Unordered output:
	// charge-1 attempt 1: done, wait 0s, reason ""
	// charge-2 attempt 1: deferred, wait 1m0s, reason ""
	// charge-2 attempt 1: done, wait 0s, reason ""
	// receipt-c2 attempt 1: done, wait 0s, reason ""
	// charge-3 attempt 1: dead-lettered, wait 0s, reason "permanent: negative amount"
	// receipt-c1 attempt 1: done, wait 0s, reason ""
}
