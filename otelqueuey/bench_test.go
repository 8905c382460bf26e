//go:build unix

package otelqueuey_test

import (
	"context"
	"fmt"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/queuey/queuey/internal/brokertest"
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
// the instrumented run handled than the one before it, jobs/s the mean rates,
// and cpu-µs/job the CPU this process spent per job each way. Each run
// carries the pprof label side=off or side=on, so that a -cpuprofile splits
// them (go tool pprof -tagfocus side=on).
//
//	go test -run '^$' -bench 'Overhead$' -benchtime 9x ./otelqueuey/
func BenchmarkOverhead(b *testing.B) {
	benchOverhead(b, sdktrace.AlwaysSample())
}

// BenchmarkOverheadSampled is BenchmarkOverhead with one trace in ten
// sampled (ParentBased(TraceIDRatioBased(0.1))): metrics and trace
// context for every job, spans recorded for a tenth of them.
//
//	go test -run '^$' -bench 'OverheadSampled' -benchtime 9x ./otelqueuey/
func BenchmarkOverheadSampled(b *testing.B) {
	benchOverhead(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)))
}

func benchOverhead(b *testing.B, sampler sdktrace.Sampler) {
	b.Run("memory", func(b *testing.B) {
		compareOverhead(b, sampler, 1, func(b *testing.B) (runtime.Backend, string, func()) {
			be := runtime.NewMemoryBackend()
			return be, "bench", func() { be.Close() }
		})
	})
	b.Run("rabbitmq", func(b *testing.B) {
		url := brokertest.Require(b)
		compareOverhead(b, sampler, benchInFlight, func(b *testing.B) (runtime.Backend, string, func()) {
			be, err := rabbitmq.Dial(context.Background(), url, rabbitmq.Options{Logger: quietLog()})
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
// enqueuers goroutines, spans sampled by sampler.
func compareOverhead(b *testing.B, sampler sdktrace.Sampler, enqueuers int, open openFunc) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
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
	var off, on, offCPU, onCPU time.Duration
	var overheads []float64 // % fewer jobs/s, one per pair of runs, off then on
	for b.Loop() {
		var offWall, onWall, cpu time.Duration
		pprof.Do(context.Background(), pprof.Labels("side", "off"), func(context.Context) {
			offWall, cpu = runBench(b, open, enqueuers, nil)
		})
		off, offCPU = off+offWall, offCPU+cpu
		pprof.Do(context.Background(), pprof.Labels("side", "on"), func(context.Context) {
			onWall, cpu = runBench(b, open, enqueuers, inst)
		})
		on, onCPU = on+onWall, onCPU+cpu
		overheads = append(overheads, 100*(onWall.Seconds()-offWall.Seconds())/onWall.Seconds())
	}
	n := float64(b.N * benchJobs)
	b.ReportMetric(n/off.Seconds(), "off-jobs/s")
	b.ReportMetric(n/on.Seconds(), "on-jobs/s")
	slices.Sort(overheads)
	b.ReportMetric(overheads[len(overheads)/2], "overhead-%")
	b.ReportMetric(float64(offCPU.Microseconds())/n, "off-cpu-µs/job")
	b.ReportMetric(float64(onCPU.Microseconds())/n, "on-cpu-µs/job")
	b.ReportMetric(0, "ns/op") // the rates say it
}

// runBench times benchJobs enqueues and runs on a fresh queue, instrumented
// by inst unless it is nil, and returns the wall time and the CPU time this
// process spent (on a shared machine the CPU time is the steadier figure;
// it leaves out the broker's). The worker has handled a warm-up job before
// the clock starts.
func runBench(b *testing.B, open openFunc, enqueuers int, inst *otelqueuey.Instrumentation) (wall, cpu time.Duration) {
	be, name, closeBackend := open(b)
	defer closeBackend()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	q := runtime.QueueConfig{Name: name, Kind: "ping", Prefetch: benchPrefetch}
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	opts := []runtime.WorkerOption{runtime.WithLogger(quietLog())}
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

	start, startCPU := time.Now(), processCPU(b)
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
	return time.Since(start), processCPU(b) - startCPU
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func waitBench(b *testing.B, ctx context.Context, done <-chan struct{}, what string) {
	b.Helper()
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("%s not handled within %v", what, benchWait)
	}
}
