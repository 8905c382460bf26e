package otelqueuey_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type ping struct{ N int }

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// telemetry is an Instrumentation over an in-memory span recorder and a
// manual metric reader.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *metric.ManualReader
	inst   *otelqueuey.Instrumentation
}

func newTelemetry(t *testing.T, cfg otelqueuey.Config) *telemetry {
	t.Helper()
	tel := &telemetry{spans: tracetest.NewSpanRecorder(), reader: metric.NewManualReader()}
	cfg.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tel.spans))
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = metric.NewMeterProvider(metric.WithReader(tel.reader))
	}
	inst, err := otelqueuey.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	tel.inst = inst
	return tel
}

// metrics collects every metric from tel's reader.
func (tel *telemetry) metrics(t *testing.T) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var ms []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		ms = append(ms, sm.Metrics...)
	}
	return ms
}

// counts returns every counter and up-down counter by name, summed over its
// attributes, and every histogram's count as name+"#count".
func (tel *telemetry) counts(t *testing.T) map[string]int64 {
	t.Helper()
	got := map[string]int64{}
	for _, m := range tel.metrics(t) {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				got[m.Name] += dp.Value
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				got[m.Name+"#count"] += int64(dp.Count)
			}
		case metricdata.Gauge[int64]:
			for _, dp := range d.DataPoints {
				got[m.Name] += dp.Value
			}
		}
	}
	return got
}

// settledSignal is an Observer, placed after the Instrumentation, that
// passes on each settled outcome: by then the run's span has ended.
type settledSignal chan runtime.Outcome

func (s settledSignal) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }

func (s settledSignal) Outcome(_ context.Context, o runtime.Outcome) {
	if o.Kind.Settled() {
		s <- o
	}
}

func recvT[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// instrumented returns a producer and a worker over b with tel's
// middleware and observer, and a channel of settled outcomes.
func instrumented(t *testing.T, tel *telemetry, b runtime.Backend, q runtime.QueueConfig) (*runtime.Producer, *runtime.Worker, settledSignal) {
	t.Helper()
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	p.Use(tel.inst.ProducerMiddleware())
	settled := make(settledSignal, 16)
	w := runtime.NewWorker(b, runtime.WithObserver(tel.inst, settled))
	return p, w, settled
}

// startWorker runs w until the test ends.
func startWorker(t *testing.T, w *runtime.Worker) {
	t.Helper()
	brokertest.Run(t, w)
}
