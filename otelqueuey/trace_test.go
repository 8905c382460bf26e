package otelqueuey_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestTraceMemory checks one enqueue and one run on the memory backend.
func TestTraceMemory(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
	t.Cleanup(func() { b.Close() })
	checkOneTrace(t, b, "otel.trace", "queuey-memory")
}

// TestTraceRabbitMQ checks one enqueue and one run on the local RabbitMQ,
// the trace context travelling in the message's headers.
func TestTraceRabbitMQ(t *testing.T) {
	url := brokertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	name := fmt.Sprintf("otelqueuey.trace.%d", time.Now().UnixNano())
	t.Cleanup(func() { deleteQueues(t, url, name, name+".dead") })
	checkOneTrace(t, b, name, "")
}

// checkOneTrace enqueues one job onto queue name of b and handles it, and
// checks that this gives one trace of two spans: the consumer span a child
// of the producer span, both with the messaging attributes, the consumer
// span the handler's and ended Ok.
func checkOneTrace(t *testing.T, b runtime.Backend, name, system string) {
	tel := newTelemetry(t, otelqueuey.Config{System: system})
	q := runtime.QueueConfig{Name: name, Kind: runtime.KindOf[ping]()}
	p, w, settled := instrumented(t, tel, b, q)
	handlerSpan := make(chan trace.SpanContext, 1)
	runtime.Handle(w, q, func(ctx context.Context, _ ping) error {
		handlerSpan <- trace.SpanContextFromContext(ctx)
		return nil
	})
	id, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	if o := recvT(t, settled); o.Kind != runtime.OutcomeAcked || o.JobID != id {
		t.Fatalf("outcome %+v, want job %s acked", o, id)
	}
	spans := tel.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2 (producer and consumer): %v", len(spans), spanNames(spans))
	}
	prod, cons := spans[0], spans[1]
	if prod.SpanKind() != trace.SpanKindProducer || cons.SpanKind() != trace.SpanKindConsumer {
		t.Fatalf("span kinds %v, %v; want producer then consumer", prod.SpanKind(), cons.SpanKind())
	}
	if prod.Name() != "send "+name || cons.Name() != "process "+name {
		t.Errorf("span names %q, %q; want %q, %q", prod.Name(), cons.Name(), "send "+name, "process "+name)
	}
	if cons.SpanContext().TraceID() != prod.SpanContext().TraceID() || cons.Parent().SpanID() != prod.SpanContext().SpanID() {
		t.Errorf("consumer span %v (parent %v) is not the child of producer span %v", cons.SpanContext(), cons.Parent(), prod.SpanContext())
	}
	if got := recvT(t, handlerSpan); got.SpanID() != cons.SpanContext().SpanID() {
		t.Errorf("handler ran in span %v, want the consumer span %v", got.SpanID(), cons.SpanContext().SpanID())
	}
	wantSystem := system
	if wantSystem == "" {
		wantSystem = otelqueuey.SystemDefault
	}
	for _, c := range []struct {
		span sdktrace.ReadOnlySpan
		op   string
	}{{prod, "send"}, {cons, "process"}} {
		attrs := attribute.NewSet(c.span.Attributes()...)
		for key, want := range map[string]string{
			"messaging.system":           wantSystem,
			"messaging.destination.name": name,
			"messaging.message.id":       id,
			"messaging.operation.type":   c.op,
		} {
			if v, _ := attrs.Value(attribute.Key(key)); v.String() != want {
				t.Errorf("%s span: %s = %q, want %q", c.op, key, v.String(), want)
			}
		}
	}
	if cons.Status().Code != codes.Ok || !outcomeShown(cons, "acked") {
		t.Errorf("consumer span status %v, attributes %v; want Ok and queuey.outcome acked", cons.Status(), cons.Attributes())
	}
}

// TestTraceRetriedJob checks that each run of a retried job has its own
// consumer span, all children of the one producer span, and that the
// failed run's span says so.
func TestTraceRetriedJob(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
	t.Cleanup(func() { b.Close() })
	tel := newTelemetry(t, otelqueuey.Config{})
	q := runtime.QueueConfig{Name: "otel.retry", Kind: runtime.KindOf[ping](), MaxAttempts: 3}
	p, w, settled := instrumented(t, tel, b, q)
	errFlaky := errors.New("flaky")
	runtime.Handle(w, q, func(ctx context.Context, _ ping) error {
		if info, _ := runtime.InfoFromContext(ctx); info.Attempt == 1 {
			return errFlaky
		}
		return nil
	})
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	for _, want := range []runtime.OutcomeKind{runtime.OutcomeRetried, runtime.OutcomeAcked} {
		if o := recvT(t, settled); o.Kind != want {
			t.Fatalf("outcome %+v, want %v", o, want)
		}
	}
	spans := tel.spans.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3 (one producer, two consumers): %v", len(spans), spanNames(spans))
	}
	prod := spans[0]
	for i, cons := range spans[1:] {
		attempt := i + 1
		if cons.SpanKind() != trace.SpanKindConsumer || cons.SpanContext().TraceID() != prod.SpanContext().TraceID() || cons.Parent().SpanID() != prod.SpanContext().SpanID() {
			t.Errorf("run %d: span %q (%v, parent %v) is not a consumer child of the producer span %v", attempt, cons.Name(), cons.SpanKind(), cons.Parent().SpanID(), prod.SpanContext().SpanID())
		}
		attrs := attribute.NewSet(cons.Attributes()...)
		if v, _ := attrs.Value("queuey.job.attempt"); v.AsInt64() != int64(attempt) {
			t.Errorf("run %d: queuey.job.attempt = %v", attempt, v.String())
		}
	}
	if first := spans[1]; first.Status().Code != codes.Error || first.Status().Description != errFlaky.Error() || !hasEvent(first, "retried") {
		t.Errorf("failed run's span: status %v, events %v; want Error %q with a retried event", first.Status(), first.Events(), errFlaky)
	}
	if second := spans[2]; second.Status().Code != codes.Ok {
		t.Errorf("second run's span status %v, want Ok", second.Status())
	}
}

// outcomeShown reports whether s says it ended with outcome: as its
// queuey.outcome attribute and, unless acked, as an event.
func outcomeShown(s sdktrace.ReadOnlySpan, outcome string) bool {
	attrs := attribute.NewSet(s.Attributes()...)
	if v, _ := attrs.Value("queuey.outcome"); v.String() != outcome {
		return false
	}
	return outcome == "acked" || hasEvent(s, outcome)
}

func hasEvent(s sdktrace.ReadOnlySpan, name string) bool {
	for _, e := range s.Events() {
		if e.Name == name {
			return true
		}
	}
	return false
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	return names
}

// deleteQueues removes a test's queues from the broker.
func deleteQueues(t testing.TB, url string, names ...string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("delete queues %v: %v", names, err)
		return
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Errorf("delete queues %v: %v", names, err)
		return
	}
	defer ch.Close()
	for _, name := range names {
		if _, err := ch.QueueDelete(name, false, false, false); err != nil {
			t.Errorf("delete queue %s: %v", name, err)
			return
		}
	}
}

// TestTraceScheduledJob checks that a job a schedule enqueues, through the
// instrumented producer given to the worker, gets a producer span and that
// its run's consumer span is that span's child.
func TestTraceScheduledJob(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
	t.Cleanup(func() { b.Close() })
	tel := newTelemetry(t, otelqueuey.Config{})
	q := runtime.QueueConfig{Name: "otel.scheduled", Kind: runtime.KindOf[ping]()}
	settled := make(settledSignal, 16)
	enqueued := make(chan struct{}, 16)
	// Outermost, so that when it hears back the producer span has ended.
	signal := func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			errs := next(ctx, envs, delay)
			enqueued <- struct{}{}
			return errs
		}
	}
	p := runtime.NewProducerUndeclared(b)
	p.Use(signal, tel.inst.ProducerMiddleware())
	w := runtime.NewWorker(b, runtime.WithObserver(tel.inst, settled), runtime.WithProducer(p))
	runtime.Periodic(w, q, runtime.Schedule{Spec: "@every 1s"}, func() ping { return ping{N: 1} })
	runtime.Handle(w, q, func(context.Context, ping) error { return nil })
	startWorker(t, w)
	recvT(t, enqueued)
	o := recvT(t, settled)
	var prod, cons sdktrace.ReadOnlySpan
	for _, s := range tel.spans.Ended() {
		attrs := attribute.NewSet(s.Attributes()...)
		if v, _ := attrs.Value("messaging.message.id"); v.AsString() != o.JobID {
			continue
		}
		switch s.SpanKind() {
		case trace.SpanKindProducer:
			prod = s
		case trace.SpanKindConsumer:
			cons = s
		}
	}
	if prod == nil || cons == nil {
		t.Fatalf("spans %v: want a producer and a consumer span of the tick's job %s", spanNames(tel.spans.Ended()), o.JobID)
	}
	if cons.Parent().SpanID() != prod.SpanContext().SpanID() || cons.SpanContext().TraceID() != prod.SpanContext().TraceID() {
		t.Errorf("consumer span (parent %v) is not the child of the tick's producer span %v", cons.Parent().SpanID(), prod.SpanContext().SpanID())
	}
}
