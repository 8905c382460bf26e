package otelqueuey_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// Trace a job from its enqueue to its run: the producer's middleware starts
// a send span and carries its context in the job's headers; the worker's
// observer starts the process span as its child. Spans go to an in-memory
// recorder here; an exporter (stdouttrace, OTLP) takes its place in a program.
func ExampleNew() {
	ctx := context.Background()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(ctx)
	inst, err := otelqueuey.New(otelqueuey.Config{TracerProvider: tp}) // metrics: the global MeterProvider
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inst.Close()

	backend := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer backend.Close()
	producer, err := runtime.NewProducer(ctx, backend, emails.Queues()...)
	if err != nil {
		fmt.Println(err)
		return
	}
	producer.Use(inst.ProducerMiddleware())
	_, _ = emails.EnqueueSendEmail(ctx, producer, emails.SendEmail{To: "ada@example.com"})

	runCtx, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	worker := runtime.NewWorker(backend,
		runtime.WithObserver(inst),
		runtime.WithProducer(producer), // the jobs its schedules enqueue are traced too
	)
	emails.HandleSendEmail(worker, func(ctx context.Context, job emails.SendEmail) error { stop(); return nil })
	_ = worker.Run(runCtx)

	ended := spans.Ended() // in the order they ended: send first
	for _, s := range ended {
		fmt.Printf("%s (%s), child of send: %v\n", s.Name(), s.SpanKind(), s.Parent().SpanID() == ended[0].SpanContext().SpanID())
	}
	// Output:
	// send emails.send_email (producer), child of send: false
	// process emails.send_email (consumer), child of send: true
}
