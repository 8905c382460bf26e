package otelqueuey_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// TestLogHandler checks that a record logged inside a span carries its
// trace and span IDs, also through WithAttrs and WithGroup, and that one
// logged without a span carries neither.
func TestLogHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(otelqueuey.NewLogHandler(slog.NewJSONHandler(&buf, nil))).With("app", "test")
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "work")
	log.InfoContext(ctx, "inside")
	span.End()
	log.InfoContext(context.Background(), "outside")

	dec := json.NewDecoder(&buf)
	var inside, outside map[string]any
	if err := dec.Decode(&inside); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&outside); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if inside["trace_id"] != sc.TraceID().String() || inside["span_id"] != sc.SpanID().String() || inside["app"] != "test" {
		t.Errorf("record inside the span = %v, want trace_id %s, span_id %s and app", inside, sc.TraceID(), sc.SpanID())
	}
	if _, ok := outside["trace_id"]; ok {
		t.Errorf("record outside any span = %v, want no trace_id", outside)
	}
}

// TestWorkerLogsCarryTraceIDs checks that the worker's own records about a
// run (here its retry and its dead letter) are logged with the run's
// context, so that NewLogHandler gives them the run's consumer span.
func TestWorkerLogsCarryTraceIDs(t *testing.T) {
	var buf syncBuffer
	log := slog.New(otelqueuey.NewLogHandler(slog.NewJSONHandler(&buf, nil)))
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(log))
	t.Cleanup(func() { b.Close() })
	tel := newTelemetry(t, otelqueuey.Config{})
	q := runtime.QueueConfig{Name: "otel.logs", Kind: runtime.KindOf[ping](), MaxAttempts: 2, RetryBase: time.Millisecond}
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	p.Use(tel.inst.ProducerMiddleware())
	settled := make(settledSignal, 4)
	w := runtime.NewWorker(b, runtime.WithObserver(tel.inst, settled))
	runtime.Handle(w, q, func(context.Context, ping) error { return errors.New("no") })
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	for _, want := range []runtime.OutcomeKind{runtime.OutcomeRetried, runtime.OutcomeDeadLettered} {
		if o := recvT(t, settled); o.Kind != want {
			t.Fatalf("outcome %+v, want %v", o, want)
		}
	}
	runs := map[string]string{} // span ID of each consumer span -> its trace ID
	for _, s := range tel.spans.Ended() {
		if s.SpanKind() == trace.SpanKindConsumer {
			runs[s.SpanContext().SpanID().String()] = s.SpanContext().TraceID().String()
		}
	}
	logged := map[string]string{} // message -> span ID
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	for dec.More() {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatal(err)
		}
		msg, _ := rec["msg"].(string)
		spanID, _ := rec["span_id"].(string)
		if traceID, ok := runs[spanID]; !ok || rec["trace_id"] != traceID {
			t.Errorf("record %v: span_id and trace_id are not those of a consumer span %v", rec, runs)
		}
		logged[msg] = spanID
	}
	retry, dead := logged["queuey: job failed; will retry"], logged["queuey: job dead-lettered"]
	if len(runs) != 2 || retry == "" || dead == "" || retry == dead {
		t.Errorf("records %v, want a retry and a dead letter, each in its own run's span of %v", logged, runs)
	}
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
