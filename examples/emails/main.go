// Command emails runs the jobs of package emails through a worker and
// prints what happens to each: a success, a failure retried after its
// backoff, a 429 deferred without burning an attempt, and a permanent
// failure dead-lettered. It exits once it has seen all four.
//
// It runs on the in-memory backend, or on RabbitMQ when QUEUEY_AMQP_URL is
// set:
//
//	go run ./examples/emails
//	QUEUEY_AMQP_URL=amqp://guest:guest@127.0.0.1:5672/ go run ./examples/emails
//
// Asked to, it exports OpenTelemetry spans and Prometheus metrics:
// QUEUEY_TRACE=stdout prints every span as a line of JSON as it ends, and
// QUEUEY_METRICS_ADDR=:9464 serves /metrics there, until interrupted.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// runTimeout bounds the whole run: every outcome is due within a few
// seconds.
const runTimeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	obs, err := observabilityFromEnv()
	if err == nil {
		err = run(ctx, os.Stdout, log, obs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "emails:", err)
		os.Exit(1)
	}
}

// run enqueues the jobs, works them until every expected outcome is seen,
// and shuts the worker down; with metrics served, it then serves them
// until ctx ends.
func run(ctx context.Context, out io.Writer, log *slog.Logger, obs observability) error {
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	start := time.Now()

	if obs.exports() {
		// Records about a run carry its trace and span IDs.
		log = slog.New(otelqueuey.NewLogHandler(log.Handler()))
	}
	b, name, closeBackend, err := openBackend(ctx, log)
	if err != nil {
		return err
	}
	defer closeBackend()
	fmt.Fprintf(out, "backend: %s\n", name)

	p := &printer{out: out}
	tel, err := instrument(p, b, obs)
	if err != nil {
		return err
	}
	defer tel.shutdown(context.WithoutCancel(ctx))
	producer, err := runtime.NewProducer(ctx, b, emails.Queues()...)
	if err != nil {
		return err
	}
	tel.producer(producer)
	app := newApp(p)
	// Jobs the worker's schedules would enqueue go through the producer,
	// instrumented like every other enqueue.
	w := runtime.NewWorker(b, append(tel.workerOptions(), runtime.WithProducer(producer), runtime.WithShutdownTimeout(5*time.Second))...)
	emails.HandleSendEmail(w, app.sendEmail)
	emails.HandleChargeCard(w, app.chargeCard)
	// The jobs that must succeed, by ID. On RabbitMQ, jobs left over from
	// an earlier run may be handled too; they are not waited for.
	pending := map[string]bool{}
	var bounceID string
	jobs := []emails.SendEmail{
		{To: "ada@example.com", Subject: "Welcome", Body: "Hello Ada."},
		{To: "flaky@example.com", Subject: "Receipt", Body: "Thanks."},
		{To: "nobody@bounce.example", Subject: "Newsletter", Body: "News."},
	}
	for _, job := range jobs {
		id, err := emails.EnqueueSendEmail(ctx, producer, job)
		if err != nil {
			return err
		}
		p.printf("enqueued", "SendEmail to %s (job %s)", job.To, id)
		if strings.HasSuffix(job.To, bounceDomain) {
			bounceID = id
		} else {
			pending[id] = true
		}
	}
	charge := emails.ChargeCard{CustomerID: "cus_42", Cents: 1999, Currency: "USD"}
	id, err := emails.EnqueueChargeCard(ctx, producer, charge)
	if err != nil {
		return err
	}
	p.printf("enqueued", "ChargeCard of %d %s cents to %s (job %s)", charge.Cents, charge.Currency, charge.CustomerID, id)
	pending[id] = true

	// The worker starts after the jobs are in, so the output reads in order.
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(workerCtx) }()

	// Success, retried success, deferred success: three jobs done.
	for len(pending) > 0 {
		select {
		case id := <-app.done:
			delete(pending, id)
		case err := <-ran:
			return fmt.Errorf("worker stopped early: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not every job finished within %v: %w", runTimeout, ctx.Err())
		}
	}
	if err := printDeadLetters(ctx, b, p, emails.SendEmailQueue.Name, bounceID); err != nil {
		return err
	}
	p.printf("done", "all outcomes seen in %.1fs; shutting down", time.Since(start).Seconds())
	if _, inMemory := b.(*runtime.MemoryBackend); !inMemory {
		p.printf("inspect", "the dead letter stays on the broker; see it with: go run ./cmd/queuey dead ls %s", emails.SendEmailQueue.Name)
	}

	stopWorker()
	select {
	case err := <-ran:
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
	case <-time.After(10 * time.Second):
		return errors.New("worker did not stop within 10s")
	}
	if tel.metrics != "" {
		p.printf("metrics", "serving %s until interrupted", tel.metrics)
		<-outer.Done()
	}
	return nil
}

// printDeadLetters waits until the job id is a dead letter of queue and
// prints it, leaving it there for an operator to inspect.
func printDeadLetters(ctx context.Context, b runtime.Backend, p *printer, queue, id string) error {
	in, ok := b.(admin.Inspector)
	if !ok {
		p.printf("dead", "this backend cannot show dead letters; see queue %s.dead", queue)
		return nil
	}
	// The worker dead-letters a job just after its handler returns, so
	// look a few times.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		dl, err := in.DeadLetter(ctx, queue, id)
		if err == nil {
			p.printf("dead", "%s: job %s after attempt %d of %d: %s", queue, dl.ID, dl.Attempt, dl.MaxAttempts, dl.Reason)
			return nil
		}
		if !errors.Is(err, admin.ErrDeadLetterNotFound) {
			return fmt.Errorf("dead letter %s of %s: %w", id, queue, err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("job %s not dead-lettered on %s within %v: %w", id, queue, runTimeout, ctx.Err())
		}
	}
}

// printer writes one labelled line per event; handlers run concurrently.
type printer struct {
	mu  sync.Mutex
	out io.Writer
}

// Write writes b whole, between lines of printf: spans are printed
// through it.
func (p *printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *printer) printf(label, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%-11s %s\n", label+":", fmt.Sprintf(format, args...))
}
