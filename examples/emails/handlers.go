package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/runtime"
)

// app holds the handlers and the fake services they call.
type app struct {
	p    *printer
	done chan string // the ID of each job that succeeded

	mu      sync.Mutex
	limited map[string]bool // job IDs the gateway has rate limited once
}

func newApp(p *printer) *app {
	return &app{p: p, done: make(chan string, 16), limited: map[string]bool{}}
}

// bounceDomain is where the fake mail server has no mailboxes.
const bounceDomain = "@bounce.example"

// errBounce is what the fake mail server answers for a mailbox that does
// not exist: retrying cannot help.
var errBounce = errors.New("550 mailbox does not exist")

// sendEmail fails the first run for flaky@ addresses, which the worker
// retries after retry_base, and fails bounce addresses for good.
func (a *app) sendEmail(ctx context.Context, job emails.SendEmail) error {
	info, _ := runtime.InfoFromContext(ctx)
	switch {
	case strings.HasSuffix(job.To, bounceDomain):
		a.p.printf("permanent", "SendEmail to %s: %v; dead-lettering", job.To, errBounce)
		return runtime.Permanent(fmt.Errorf("send to %s: %w", job.To, errBounce))
	case strings.HasPrefix(job.To, "flaky@") && info.Attempt == 1:
		err := errors.New("smtp: connection reset by peer")
		a.p.printf("retry", "SendEmail to %s failed on attempt %d of %d (%v); retried in %v",
			job.To, info.Attempt, info.MaxAttempts, err, emails.SendEmailQueue.RetryDelay(info.Attempt))
		return err
	}
	a.p.printf("success", "sent %q to %s on attempt %d of %d", job.Subject, job.To, info.Attempt, info.MaxAttempts)
	a.succeeded(ctx, info.ID)
	return nil
}

// chargeCard meets a rate-limited gateway: its first call answers 429 with
// Retry-After: 1, and the job is deferred, which burns no attempt.
func (a *app) chargeCard(ctx context.Context, job emails.ChargeCard) error {
	info, _ := runtime.InfoFromContext(ctx)
	a.mu.Lock()
	first := !a.limited[info.ID]
	a.limited[info.ID] = true
	a.mu.Unlock()
	if first {
		const retryAfter = time.Second
		a.p.printf("defer", "ChargeCard for %s: gateway answered 429 Retry-After %v; deferred, still attempt %d of %d",
			job.CustomerID, retryAfter, info.Attempt, info.MaxAttempts)
		return runtime.Defer(retryAfter)
	}
	a.p.printf("success", "charged %d %s cents to %s on attempt %d of %d", job.Cents, job.Currency, job.CustomerID, info.Attempt, info.MaxAttempts)
	a.succeeded(ctx, info.ID)
	return nil
}

// succeeded reports job id done to run, unless the run is over.
func (a *app) succeeded(ctx context.Context, id string) {
	select {
	case a.done <- id:
	case <-ctx.Done():
	}
}
