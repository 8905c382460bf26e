package otelqueuey_test

import (
	"context"
	"maps"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// BenchmarkPerJob measures what the instrumentation alone costs one job,
// with no backend: the producer middleware around a publish that does
// nothing, then the observer's Start and its acked Outcome, as a worker
// calls them. Spans go through a BatchSpanProcessor to an exporter that
// drops them and metrics to an SDK reader, as in production; "sampled"
// samples every span, "unsampled" none (metrics and propagation only).
//
//	go test -run '^$' -bench PerJob -benchmem ./otelqueuey/
func BenchmarkPerJob(b *testing.B) {
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
	}{
		{"sampled", sdktrace.AlwaysSample()},
		{"unsampled", sdktrace.NeverSample()},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			defer tp.Shutdown(context.Background())
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			defer mp.Shutdown(context.Background())
			inst, err := otelqueuey.New(otelqueuey.Config{TracerProvider: tp, MeterProvider: mp})
			if err != nil {
				b.Fatal(err)
			}
			var published *runtime.Envelope
			publish := inst.ProducerMiddleware()(func(_ context.Context, envs []*runtime.Envelope, _ time.Duration) []error {
				published = envs[0]
				return make([]error, len(envs))
			})
			ctx := context.Background()
			now := time.Now()
			envs := make([]*runtime.Envelope, 1)
			headers := map[string]string{} // the consumer's decoded copy, reused: its cost is the backend's
			b.ReportAllocs()
			for b.Loop() {
				env := &runtime.Envelope{ID: "job-1", Queue: "perjob", Kind: "ping", Attempt: 1, MaxAttempts: 3, EnqueuedAt: now}
				envs[0] = env
				publish(ctx, envs, 0)
				got := *published // what a consumer decodes
				clear(headers)
				maps.Copy(headers, published.Headers)
				got.Headers = headers
				rctx := inst.Start(ctx, &got)
				inst.Outcome(rctx, runtime.Outcome{Kind: runtime.OutcomeAcked, Queue: got.Queue, JobID: got.ID, JobKind: got.Kind, Attempt: 1, MaxAttempts: 3})
			}
		})
	}
}
