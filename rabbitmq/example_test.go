package rabbitmq_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Dial a cluster of three nodes, enqueue a job and work the queues until
// the process is interrupted. It needs a broker, so it is compiled and not
// run.
func ExampleDial() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Dial tries the first URL, then Nodes in order; a lost connection is
	// dialled again over all of them.
	backend, err := rabbitmq.Dial(ctx, "amqp://app:secret@rabbit-1:5672/", rabbitmq.Options{
		Nodes:  []string{"amqp://app:secret@rabbit-2:5672/", "amqp://app:secret@rabbit-3:5672/"},
		Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)), // the backend's and its workers' records
	})
	if err != nil {
		log.Fatal(err)
	}
	defer backend.Close()

	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com", Subject: "Welcome"}); err != nil {
		log.Fatal(err)
	}

	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		log.Printf("sending %q to %s", job.Subject, job.To)
		return nil
	})
	if err := worker.Run(ctx); err != nil { // nil after a clean shutdown
		log.Fatal(err)
	}
}
