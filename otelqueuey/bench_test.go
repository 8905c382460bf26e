//go:build unix

package otelqueuey_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

const (
	benchJobs     = 20000
	benchPrefetch = 50
	benchInFlight = 64 // enqueues at once on RabbitMQ, each waiting for its confirm
	benchWait     = 5 * time.Minute
)

// BenchmarkOverhead measures end-to-end jobs/s (a no-op handler with
// prefetch and concurrency 50; enqueues from one goroutine on the memory
// backend, whose one lock 64 goroutines would only fight over, and from 64
// on RabbitMQ, where each waits for its confirm) with tracing and
// metrics off and on, alternately on the same backend, set up as in
// production: every span sampled and batched (BatchSpanProcessor) to an
// exporter that drops it, metrics aggregated by the SDK for a Prometheus
// reader. Each op is one run of 20,000 jobs each way, off then on;
// overhead-% is the median over the ops of how many fewer jobs a second
// the instrumented run handled than the one before it, added-cpu-µs/job
// the median of how much more CPU a job took this process in it, and
// jobs/s the mean rates. Per job and each way, it reports the medians of
// this process's CPU (cpu-µs, the garbage collector's included), the
// broker's (broker-µs, where it runs on this machine), heap allocations
// and bytes, garbage collections per thousand jobs and the collector's
// CPU (gc-µs, the runtime's estimate; see e2e.Span.GCCPU): on a shared
// machine those move less than the rates. Each run carries the pprof
// label side=off or side=on, so that a -cpuprofile splits them (go tool
// pprof -tagfocus side=on).
//
//	go test -run '^$' -bench 'Overhead$' -benchtime 30x ./otelqueuey/
func BenchmarkOverhead(b *testing.B) {
	benchOverhead(b, setup{sampler: sdktrace.AlwaysSample()})
}

// BenchmarkOverheadSampled is BenchmarkOverhead with one trace in ten
// sampled (ParentBased(TraceIDRatioBased(0.1))): metrics and trace
// context for every job, spans recorded for a tenth of them.
//
//	go test -run '^$' -bench 'OverheadSampled' -benchtime 30x ./otelqueuey/
func BenchmarkOverheadSampled(b *testing.B) {
	benchOverhead(b, setup{sampler: sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))})
}

// BenchmarkOverheadUnsampled is BenchmarkOverhead with no trace sampled:
// metrics and trace context for every job, and no span recorded. It is
// what the instrumentation costs every job whatever the sampling.
//
//	go test -run '^$' -bench 'OverheadUnsampled' -benchtime 30x ./otelqueuey/
func BenchmarkOverheadUnsampled(b *testing.B) {
	benchOverhead(b, setup{sampler: sdktrace.NeverSample()})
}

// BenchmarkOverheadMetrics is BenchmarkOverhead with metrics alone: the
// tracer provider is OpenTelemetry's no-op one, so no span is made and no
// trace context travels.
//
//	go test -run '^$' -bench 'OverheadMetrics' -benchtime 30x ./otelqueuey/
func BenchmarkOverheadMetrics(b *testing.B) {
	benchOverhead(b, setup{})
}

// BenchmarkOverheadControl runs both sides of every pair with telemetry
// off: what it reports as overhead is the method's own lean, which the
// other runs' figures are to be read against.
//
//	go test -run '^$' -bench 'OverheadControl' -benchtime 30x ./otelqueuey/
func BenchmarkOverheadControl(b *testing.B) {
	benchOverhead(b, setup{control: true})
}

// setup is the telemetry of the "on" side of an overhead run.
type setup struct {
	sampler sdktrace.Sampler // nil: OpenTelemetry's no-op tracer provider
	control bool             // the "on" side runs without telemetry too
}

// benchOverhead compares on both backends.
func benchOverhead(b *testing.B, set setup) {
	b.Run("memory", func(b *testing.B) {
		compareOverhead(b, set, 1, e2e.Meter{}, func(b *testing.B) (runtime.Backend, string, func()) {
			be := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
			return be, "bench", func() { be.Close() }
		})
	})
	b.Run("rabbitmq", func(b *testing.B) {
		url := brokertest.Require(b)
		compareOverhead(b, set, benchInFlight, e2e.BrokerMeter(url), func(b *testing.B) (runtime.Backend, string, func()) {
			be, err := rabbitmq.Dial(context.Background(), url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: quietLog()})
			if err != nil {
				b.Fatal(err)
			}
			name := fmt.Sprintf("otelqueuey.bench.%d", time.Now().UnixNano())
			return be, name, func() { be.Close(); deleteQueues(b, url, name, name+".dead") }
		})
	})
}

type openFunc func(b *testing.B) (be runtime.Backend, queue string, close func())

// compareOverhead runs the jobs off and on alternately, enqueueing from
// enqueuers goroutines, the "on" side as set says, measured by meter.
func compareOverhead(b *testing.B, set setup, enqueuers int, meter e2e.Meter, open openFunc) {
	var tp trace.TracerProvider = noop.NewTracerProvider()
	flush := func() {}
	if set.sampler != nil {
		sdk := sdktrace.NewTracerProvider(sdktrace.WithSampler(set.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer sdk.Shutdown(context.Background())
		tp = sdk
		// The spans of a run are exported within it, not during the
		// next one.
		flush = func() {
			if err := sdk.ForceFlush(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	mp, _, err := otelqueuey.NewPrometheus()
	if err != nil {
		b.Fatal(err)
	}
	defer mp.Shutdown(context.Background())
	inst, err := otelqueuey.New(otelqueuey.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	var off, on []e2e.Span
	var overheads []float64 // % fewer jobs/s, one per pair of runs, off then on
	for b.Loop() {
		var s e2e.Span
		pprof.Do(context.Background(), pprof.Labels("side", "off"), func(context.Context) {
			s = runBench(b, open, meter, enqueuers, nil, nil)
		})
		off = append(off, s)
		pprof.Do(context.Background(), pprof.Labels("side", "on"), func(context.Context) {
			if set.control {
				s = runBench(b, open, meter, enqueuers, nil, nil)
			} else {
				s = runBench(b, open, meter, enqueuers, inst, flush)
			}
		})
		on = append(on, s)
		overheads = append(overheads, 100*(1-s.Rate()/off[len(off)-1].Rate()))
	}
	b.ReportMetric(e2e.Median(overheads), "overhead-%")
	added := make([]float64, len(on)) // client µs a job, one per pair
	for i := range on {
		added[i] = on[i].PerJob(on[i].ClientCPU) - off[i].PerJob(off[i].ClientCPU)
	}
	b.ReportMetric(e2e.Median(added), "added-cpu-µs/job")
	for _, side := range []struct {
		name  string
		spans []e2e.Span
	}{{"off", off}, {"on", on}} {
		var jobs int
		var wall time.Duration
		for _, s := range side.spans {
			jobs, wall = jobs+s.Jobs, wall+s.Elapsed
		}
		b.ReportMetric(float64(jobs)/wall.Seconds(), side.name+"-jobs/s")
		perJob := func(f func(e2e.Span) float64) float64 {
			return e2e.MedianOf(side.spans, func(s e2e.Span) float64 { return f(s) / float64(s.Jobs) })
		}
		b.ReportMetric(perJob(func(s e2e.Span) float64 { return float64(s.ClientCPU.Nanoseconds()) / 1e3 }), side.name+"-cpu-µs/job")
		if slices.ContainsFunc(side.spans, func(s e2e.Span) bool { return s.ServerCPU > 0 }) {
			b.ReportMetric(perJob(func(s e2e.Span) float64 { return float64(s.ServerCPU.Nanoseconds()) / 1e3 }), side.name+"-broker-µs/job")
		}
		b.ReportMetric(perJob(func(s e2e.Span) float64 { return float64(s.Mallocs) }), side.name+"-allocs/job")
		b.ReportMetric(perJob(func(s e2e.Span) float64 { return float64(s.AllocBytes) }), side.name+"-B/job")
		b.ReportMetric(perJob(func(s e2e.Span) float64 { return 1000 * float64(s.GCs) }), side.name+"-gc/kjob")
		b.ReportMetric(perJob(func(s e2e.Span) float64 { return float64(s.GCCPU.Nanoseconds()) / 1e3 }), side.name+"-gc-µs/job")
	}
	b.ReportMetric(0, "ns/op") // the rates say it
}

// runBench times benchJobs enqueues and runs on a fresh queue, instrumented
// by inst unless it is nil, and returns what meter measured. The worker
// has handled a warm-up job before the clock starts; flush, unless nil,
// is called before it stops.
func runBench(b *testing.B, open openFunc, meter e2e.Meter, enqueuers int, inst *otelqueuey.Instrumentation, flush func()) e2e.Span {
	be, name, closeBackend := open(b)
	defer closeBackend()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	q := runtime.QueueConfig{Name: name, Kind: runtime.KindOf[ping](), Prefetch: benchPrefetch}
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	var opts []runtime.WorkerOption
	if inst != nil {
		p.Use(inst.ProducerMiddleware())
		opts = append(opts, runtime.WithObserver(inst))
	}
	w := runtime.NewWorker(be, opts...)
	var handled atomic.Int64
	warm, all := make(chan struct{}), make(chan struct{})
	runtime.Handle(w, q, func(_ context.Context, j ping) error {
		switch {
		case j.N == 0:
			close(warm)
		case handled.Add(1) == benchJobs:
			close(all)
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	werr := make(chan error, 1)
	go func() { werr <- w.Run(wctx) }()
	defer func() { stop(); <-werr }()
	if _, err := runtime.Enqueue(ctx, p, q, ping{N: 0}); err != nil {
		b.Fatal(err)
	}
	waitBench(b, ctx, warm, "warm-up job")

	mark := meter.Start()
	var wg sync.WaitGroup
	var next atomic.Int64
	for range enqueuers {
		wg.Go(func() {
			for i := next.Add(1); i <= benchJobs; i = next.Add(1) {
				if _, err := runtime.Enqueue(ctx, p, q, ping{N: int(i)}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	waitBench(b, ctx, all, fmt.Sprintf("%d jobs", benchJobs))
	if flush != nil {
		flush()
	}
	return mark.Stop(benchJobs)
}

func waitBench(b *testing.B, ctx context.Context, done <-chan struct{}, what string) {
	b.Helper()
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("%s not handled within %v", what, benchWait)
	}
}
