package otelqueuey_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// TestProducerHeaders checks what the producer middleware puts in a job's
// headers: the W3C traceparent of the job's producer span, sampled or
// not, beside the headers the job already had; and nothing at all, not
// even an empty map, when there is no trace context to carry.
func TestProducerHeaders(t *testing.T) {
	sdk := func(s sdktrace.Sampler) trace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSampler(s))
	}
	for _, c := range []struct {
		name    string
		tp      trace.TracerProvider
		headers map[string]string // the job's own
		want    []string          // header names after the middleware
		flags   string            // the traceparent's last field
	}{
		{"sampled", sdk(sdktrace.AlwaysSample()), nil, []string{"traceparent"}, "01"},
		{"unsampled", sdk(sdktrace.NeverSample()), nil, []string{"traceparent"}, "00"},
		{"beside the job's own", sdk(sdktrace.AlwaysSample()), map[string]string{"tenant": "a"}, []string{"tenant", "traceparent"}, "01"},
		{"tracing off", noop.NewTracerProvider(), nil, nil, ""},
		{"tracing off, the job's own", noop.NewTracerProvider(), map[string]string{"tenant": "a"}, []string{"tenant"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			inst, err := otelqueuey.New(otelqueuey.Config{TracerProvider: c.tp})
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			var got *runtime.Envelope
			publish := inst.ProducerMiddleware()(func(_ context.Context, envs []*runtime.Envelope, _ time.Duration) []error {
				got = envs[0]
				return make([]error, len(envs))
			})
			env := &runtime.Envelope{ID: "job-1", Queue: "q", Kind: "ping", Headers: c.headers}
			if errs := publish(context.Background(), []*runtime.Envelope{env}, 0); errs[0] != nil {
				t.Fatal(errs[0])
			}
			names := slices.Sorted(maps.Keys(got.Headers))
			if diff := cmp.Diff(c.want, names); diff != "" {
				t.Fatalf("header names (-want +got):\n%s", diff)
			}
			if c.want == nil && got.Headers != nil {
				t.Fatalf("headers = %#v, want nil", got.Headers)
			}
			if c.headers != nil && got.Headers["tenant"] != "a" {
				t.Fatalf("the job's own header: got %q, want %q", got.Headers["tenant"], "a")
			}
			if c.flags == "" {
				return
			}
			tp := got.Headers["traceparent"]
			if len(tp) != 55 || tp[:3] != "00-" || tp[53:] != c.flags {
				t.Fatalf("traceparent = %q, want version 00 and flags %s", tp, c.flags)
			}
		})
	}
}
