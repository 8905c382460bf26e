package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// traffic is a worker and a producer that keep the example's queues busy,
// over a backend of their own, as an application's would be.
type traffic struct {
	backend *rabbitmq.Backend
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// What each SendEmail address makes the handler do.
const (
	slowPrefix   = "slow@"           // held until shutdown: in flight
	flakyPrefix  = "flaky@"          // fails every run: retried, then dead
	bounceSuffix = "@bounce.example" // fails for good: dead at once
)

// deferFor is how long a ChargeCard waits after its first run.
const deferFor = 30 * time.Second

// startTraffic fills the queues of the broker at url with jobs in every
// state and keeps a trickle of new ones coming until stop.
func startTraffic(ctx context.Context, url string, out io.Writer, log *slog.Logger) (*traffic, error) {
	// The worker's outcomes are the show here, on the pages, not in the log.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Logger: quiet, ConnectionName: "queuey dashboard example traffic"})
	if err != nil {
		return nil, err
	}
	p, err := runtime.NewProducer(ctx, b, emails.Queues()...)
	if err != nil {
		b.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &traffic{backend: b, cancel: cancel}
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(2*time.Second))
	emails.HandleSendEmail(w, sendEmail)
	var mu sync.Mutex
	deferred := map[string]bool{}
	emails.HandleChargeCard(w, func(ctx context.Context, job emails.ChargeCard) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		first := !deferred[info.ID]
		deferred[info.ID] = true
		mu.Unlock()
		if first {
			return runtime.Defer(deferFor)
		}
		return pause(ctx, 200*time.Millisecond)
	})
	t.done.Add(2)
	go func() {
		defer t.done.Done()
		if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("dashboard example: worker", "err", err)
		}
	}()

	var jobs []emails.SendEmail
	for i := range 20 {
		jobs = append(jobs, emails.SendEmail{To: fmt.Sprintf("reader%d@example.com", i), Subject: "Welcome"})
	}
	jobs = append(jobs,
		emails.SendEmail{To: "nobody" + bounceSuffix, Subject: "Newsletter", Body: "News."},
		emails.SendEmail{To: `<script>alert("hi")</script>` + bounceSuffix, Subject: "<b>markup</b>", Body: "shown as text"},
		emails.SendEmail{To: flakyPrefix + "example.com", Subject: "Receipt"},
		emails.SendEmail{To: flakyPrefix + "example.org", Subject: "Invoice"},
	)
	if _, err := emails.EnqueueManySendEmail(ctx, p, jobs); err != nil {
		t.stop()
		return nil, err
	}
	for i := range 4 {
		if _, err := emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: fmt.Sprintf("cus_%d", 40+i), Cents: 1999, Currency: "EUR"}); err != nil {
			t.stop()
			return nil, err
		}
	}
	if err := publishPoison(ctx, url, emails.SendEmailQueue.Name); err != nil {
		t.stop()
		return nil, err
	}
	fmt.Fprintln(out, "dashboard: enqueued jobs that succeed, wait, retry and die, and one poison message; more keep coming")
	go func() {
		defer t.done.Done()
		trickle(ctx, p, log)
	}()
	return t, nil
}

// stop ends the trickle and the worker, waits for both and closes their
// backend.
func (t *traffic) stop() {
	t.cancel()
	t.done.Wait()
	t.backend.Close()
}

func sendEmail(ctx context.Context, job emails.SendEmail) error {
	switch {
	case strings.HasSuffix(job.To, bounceSuffix):
		return runtime.Permanent(fmt.Errorf("send to %s: 550 mailbox does not exist", job.To))
	case strings.HasPrefix(job.To, flakyPrefix):
		return errors.New("smtp: connection reset by peer")
	}
	return pause(ctx, handleTime)
}

// handleTime is how long a SendEmail that succeeds takes: long enough that
// the trickle keeps some jobs in flight and some ready.
const handleTime = 1500 * time.Millisecond

// pause stands for work that takes d.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// trickle enqueues a few jobs a second until ctx ends.
func trickle(ctx context.Context, p *runtime.Producer, log *slog.Logger) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		batch := make([]emails.SendEmail, 1+n%6)
		for i := range batch {
			batch[i] = emails.SendEmail{To: fmt.Sprintf("user%d@example.com", n*6+i), Subject: "Hello"}
		}
		if n%15 == 0 {
			batch = append(batch, emails.SendEmail{To: fmt.Sprintf("%s%d.example.com", flakyPrefix, n), Subject: "Retry me"})
		}
		_, err := emails.EnqueueManySendEmail(ctx, p, batch)
		if err == nil && n%5 == 0 {
			_, err = emails.EnqueueChargeCard(ctx, p, emails.ChargeCard{CustomerID: fmt.Sprintf("cus_%d", n), Cents: 500, Currency: "USD"})
		}
		if err != nil && ctx.Err() == nil {
			log.Error("dashboard example: enqueue", "err", err)
		}
	}
}

// publishPoison puts a message on queue that is not a job envelope, as a
// foreign producer might: the worker moves it to the dead letters as
// poison.
func publishPoison(ctx context.Context, url, queue string) error {
	conn, err := amqp.Dial(url)
	if err != nil {
		return fmt.Errorf("publish a poison message: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Errorf("publish a poison message: %w", err)
	}
	return ch.PublishWithContext(ctx, "", queue, true, false, amqp.Publishing{
		ContentType: "text/plain",
		MessageId:   "poison-demo",
		Body:        []byte("this is not a queuey envelope <i>at all</i>"),
	})
}
