package admin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/runtime"
)

// An operator's tool reads a queue's counts and its dead letters, here on
// the memory backend after a worker dead-lettered one job.
func ExampleInspector() {
	ctx := context.Background()
	var backend runtime.Backend = runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{Subject: "Welcome"}, runtime.WithID("welcome-1"))
	runCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		stop() // one run, then the worker stops
		return runtime.Permanent(errors.New("no recipient"))
	})
	_ = worker.Run(runCtx)
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com"})
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "grace@example.com"}, runtime.WithDelay(time.Hour))

	inspector := backend.(admin.Inspector) // both backends implement it
	stats, err := inspector.QueueStats(ctx, admin.Queue{Name: emails.SendEmailQueue.Name})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d ready, %d waiting, %d dead\n", stats[0].Queue, stats[0].Ready, stats[0].Waiting, stats[0].Dead)
	dead, _ := inspector.DeadLetters(ctx, emails.SendEmailQueue.Name, admin.DeadLetterPage{Limit: 10})
	for _, l := range dead.Letters {
		fmt.Printf("%s %s: %s %s\n", l.ID, l.Kind, l.Reason, l.Payload)
	}
	// Output:
	// emails.send_email: 1 ready, 1 waiting, 1 dead
	// welcome-1 emails.SendEmail: permanent: no recipient {"Body":"","Subject":"Welcome","To":""}
}
