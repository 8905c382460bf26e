package otelqueuey_test

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// TestProducerHeaders checks what the producer middleware puts in a job's
// headers: the W3C traceparent of the job's producer span, sampled or
// not, and the enqueue's baggage, beside the headers the job already had;
// and nothing at all, not even an empty map, when there is nothing to
// carry.
func TestProducerHeaders(t *testing.T) {
	sdk := func(s sdktrace.Sampler) trace.TracerProvider {
		return sdktrace.NewTracerProvider(sdktrace.WithSampler(s))
	}
	for _, c := range []struct {
		name    string
		tp      trace.TracerProvider
		headers map[string]string // the job's own
		bag     bool              // whether the enqueue's context has baggage
		want    []string          // header names after the middleware
		sampled bool              // the traceparent's sampled flag
	}{
		{"sampled", sdk(sdktrace.AlwaysSample()), nil, false, []string{"traceparent"}, true},
		{"unsampled", sdk(sdktrace.NeverSample()), nil, false, []string{"traceparent"}, false},
		{"beside the job's own", sdk(sdktrace.AlwaysSample()), map[string]string{"tenant": "a"}, false, []string{"tenant", "traceparent"}, true},
		{"with baggage", sdk(sdktrace.AlwaysSample()), nil, true, []string{"baggage", "traceparent"}, true},
		{"tracing off", noop.NewTracerProvider(), nil, false, nil, false},
		{"tracing off, the job's own", noop.NewTracerProvider(), map[string]string{"tenant": "a"}, false, []string{"tenant"}, false},
		{"tracing off, baggage", noop.NewTracerProvider(), nil, true, []string{"baggage"}, false},
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
			ctx := context.Background()
			if c.bag {
				m, err := baggage.NewMember("tenant", "a")
				if err != nil {
					t.Fatal(err)
				}
				bag, err := baggage.New(m)
				if err != nil {
					t.Fatal(err)
				}
				ctx = baggage.ContextWithBaggage(ctx, bag)
			}
			if errs := publish(ctx, []*runtime.Envelope{env}, 0); errs[0] != nil {
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
			if c.bag && got.Headers["baggage"] != "tenant=a" {
				t.Fatalf("baggage header = %q, want %q", got.Headers["baggage"], "tenant=a")
			}
			tp, ok := got.Headers["traceparent"]
			if !ok {
				return
			}
			flags, err := strconv.ParseUint(tp[max(len(tp)-2, 0):], 16, 8)
			if len(tp) != 55 || tp[:3] != "00-" || err != nil || flags&1 == 1 != c.sampled {
				t.Fatalf("traceparent = %q, want version 00 and sampled %v", tp, c.sampled)
			}
		})
	}
}
