package otelqueuey_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/queuey/queuey/otelqueuey"
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
