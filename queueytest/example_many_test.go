package queueytest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

// announce is the code under test: it mails every address the same
// message, in one batch, an hour from now.
func announce(ctx context.Context, p *runtime.Producer, subject string, addrs ...string) error {
	jobs := make([]emails.SendEmail, len(addrs))
	for i, addr := range addrs {
		jobs[i] = emails.SendEmail{To: addr, Subject: subject}
	}
	_, err := emails.EnqueueManySendEmail(ctx, p, jobs, runtime.WithDelay(time.Hour))
	return err
}

// Assert on every job of a queue, in the order they were enqueued.
func ExampleRequireEnqueuedN() {
	// In a test, t is the test's *testing.T.
	t := &testing.T{}
	b := queueytest.New(t, emails.Queues()...)
	if err := announce(context.Background(), runtime.NewProducerUndeclared(b), "Maintenance", "ada@example.com", "grace@example.com"); err != nil {
		fmt.Println(err)
	}
	for _, sent := range queueytest.RequireEnqueuedN(t, b, emails.SendEmailJob, 2, queueytest.WithDelay(time.Hour)) {
		fmt.Println(sent.Job.To, sent.Job.Subject, sent.Delay)
	}
	// Output:
	// ada@example.com Maintenance 1h0m0s
	// grace@example.com Maintenance 1h0m0s
}
