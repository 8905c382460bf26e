package runtime_test

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

// Enqueue a job and handle it through the code queuey-gen generates for
// package emails: Queues, EnqueueSendEmail and HandleSendEmail.
func Example() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()

	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...) // declares the queues
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com", Subject: "Welcome"}); err != nil {
		fmt.Println(err)
		return
	}

	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		fmt.Println("sending", job.Subject, "to", job.To)
		stop() // one job is all this example runs
		return nil
	})
	if err := worker.Run(ctx); err != nil { // nil after a clean shutdown
		fmt.Println(err)
	}
	// Output:
	// sending Welcome to ada@example.com
}

// A handler told by a rate-limited gateway to come back later defers its
// job: it runs again after the wait, at the same attempt.
func ExampleDefer() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = emails.EnqueueChargeCard(ctx, producer, emails.ChargeCard{CustomerID: "c1", Cents: 500})

	worker := runtime.NewWorker(backend)
	runs := 0
	emails.HandleChargeCard(worker, func(ctx context.Context, job emails.ChargeCard) error {
		runs++
		info, _ := runtime.InfoFromContext(ctx)
		fmt.Printf("run %d: charge %s, attempt %d of %d\n", runs, job.CustomerID, info.Attempt, info.MaxAttempts)
		if runs == 1 {
			return runtime.Defer(time.Second) // as a 429 with Retry-After: 1 asks
		}
		stop()
		return nil
	})
	if err := worker.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// run 1: charge c1, attempt 1 of 5
	// run 2: charge c1, attempt 1 of 5
}

// A job that no retry can help is dead-lettered at once, with its reason,
// for an operator to look at (package admin) or re-drive.
func ExamplePermanent() {
	ctx := context.Background()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "nobody@example.com"}, runtime.WithID("welcome-1"))

	runCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		stop()
		return runtime.Permanent(fmt.Errorf("no mailbox %s", job.To))
	})
	if err := worker.Run(runCtx); err != nil { // returns once every run it started is settled
		fmt.Println(err)
	}

	var inspector admin.Inspector = backend
	dead, err := inspector.DeadLetters(ctx, emails.SendEmailQueue.Name, admin.DeadLetterPage{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range dead.Letters {
		fmt.Printf("%s, attempt %d of %d: %s\n", l.ID, l.Attempt, l.MaxAttempts, l.Reason)
	}
	// Output:
	// welcome-1, attempt 1 of 3: permanent: no mailbox nobody@example.com
}

// A delayed job is held, not ready, until its delay has passed.
func ExampleWithDelay() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}

	start := time.Now()
	_, err = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com", Subject: "Reminder"},
		runtime.WithDelay(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	ready, _ := backend.Ready(ctx, emails.SendEmailQueue.Name)
	fmt.Println("ready at once:", ready)

	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		fmt.Println("sending", job.Subject, "after the delay:", time.Since(start) >= time.Second)
		stop()
		return nil
	})
	if err := worker.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// ready at once: 0
	// sending Reminder after the delay: true
}

// A worker enqueues a job at each tick of a schedule; the tick's job ID is
// the schedule's name, "@", and the tick's time, which HeaderTick carries.
func ExamplePeriodic() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()

	worker := runtime.NewWorker(backend)
	runtime.Periodic(worker, emails.SendEmailQueue,
		runtime.Schedule{Name: "digest", Spec: "@every 1s"},
		func() emails.SendEmail { return emails.SendEmail{To: "ops@example.com", Subject: "Digest"} })
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		info, _ := runtime.InfoFromContext(ctx)
		fmt.Println("sending", job.Subject, "to", job.To)
		fmt.Println("ID is digest@tick:", info.ID == "digest@"+info.Headers[runtime.HeaderTick])
		stop() // the first tick is all this example runs
		return nil
	})
	if err := worker.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// sending Digest to ops@example.com
	// ID is digest@tick: true
}

// Middleware wraps every handler run of a worker.
func ExampleWorker_Use() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com", Subject: "Welcome"})

	worker := runtime.NewWorker(backend)
	worker.Use(func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(ctx context.Context, env *runtime.Envelope) error {
			fmt.Println("start", env.Kind, "attempt", env.Attempt)
			err := next(ctx, env)
			fmt.Println("end, error:", err)
			return err
		}
	})
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		fmt.Println("sending", job.Subject, "to", job.To)
		stop()
		return nil
	})
	if err := worker.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// start emails.SendEmail attempt 1
	// sending Welcome to ada@example.com
	// end, error: <nil>
}

// Producer middleware sees every envelope before it is published: here it
// adds a header, which the handler reads.
func ExampleProducer_Use() {
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	producer.Use(func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			for _, env := range envs {
				if env.Headers == nil {
					env.Headers = map[string]string{}
				}
				env.Headers["tenant"] = "acme"
			}
			return next(ctx, envs, delay)
		}
	})
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com"})

	worker := runtime.NewWorker(backend)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error {
		info, _ := runtime.InfoFromContext(ctx)
		fmt.Println("tenant:", info.Headers["tenant"])
		stop()
		return nil
	})
	if err := worker.Run(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// tenant: acme
}

// A producer that declares nothing enqueues onto queues declared already,
// through the same backend (on RabbitMQ, by any process).
func ExampleNewProducerUndeclared() {
	ctx := context.Background()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()

	producer := runtime.NewProducerUndeclared(backend)
	_, err := emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com"})
	fmt.Println("before the queues are declared:", errors.Is(err, runtime.ErrUnknownQueue))

	// Another part of the program declares them.
	if _, err := runtime.NewProducer(ctx, backend, emails.Queues()...); err != nil {
		fmt.Println(err)
		return
	}
	_, err = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com"})
	fmt.Println("after:", err)
	ready, _ := backend.Ready(ctx, emails.SendEmailQueue.Name)
	fmt.Println("ready:", ready)
	// Output:
	// before the queues are declared: true
	// after: <nil>
	// ready: 1
}

// Many jobs of one type are enqueued with their publishes in flight
// together; the generated EnqueueManySendEmail calls EnqueueMany.
func ExampleEnqueueMany() {
	ctx := context.Background()
	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}

	jobs := []emails.SendEmail{{To: "ada@example.com"}, {To: "grace@example.com"}, {To: "linus@example.com"}}
	ids, err := emails.EnqueueManySendEmail(ctx, producer, jobs, runtime.WithPriority(1))
	if batchErr, ok := errors.AsType[*runtime.BatchError](err); ok {
		for i, err := range batchErr.Errs {
			if err != nil {
				fmt.Println("not enqueued:", jobs[i].To, err)
			}
		}
	}
	fmt.Println(len(ids), "IDs")
	ready, _ := backend.Ready(ctx, emails.SendEmailQueue.Name)
	fmt.Println("ready:", ready)
	// Output:
	// 3 IDs
	// ready: 3
}
