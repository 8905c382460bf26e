package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// traceEnv names the environment variable that, set to "stdout", prints
// every span as a line of JSON as it ends.
const traceEnv = "QUEUEY_TRACE"

// metricsEnv names the environment variable that, set to an address such
// as :9464, serves Prometheus metrics at /metrics there; the example then
// keeps serving after its jobs are done, until interrupted.
const metricsEnv = "QUEUEY_METRICS_ADDR"

// observability is what the example exports; its zero value exports
// nothing.
type observability struct {
	trace       bool   // spans to the output
	metricsAddr string // where to serve /metrics
}

// exports reports whether obs exports anything.
func (obs observability) exports() bool { return obs.trace || obs.metricsAddr != "" }

func observabilityFromEnv() (observability, error) {
	obs := observability{metricsAddr: os.Getenv(metricsEnv)}
	switch v := os.Getenv(traceEnv); v {
	case "":
	case "stdout":
		obs.trace = true
	default:
		return obs, fmt.Errorf("%s=%q: want stdout or nothing", traceEnv, v)
	}
	return obs, nil
}

// telemetry is the example's instrumentation and how to stop it.
type telemetry struct {
	inst     *otelqueuey.Instrumentation // nil when nothing is exported
	metrics  string                      // the /metrics URL, when served
	shutdown func(context.Context) error
}

// instrument sets up what obs asks for over backend b: spans written to out,
// and a Prometheus endpoint with the queues' depths.
func instrument(out io.Writer, b runtime.Backend, obs observability) (*telemetry, error) {
	tel := &telemetry{shutdown: func(context.Context) error { return nil }}
	if !obs.exports() {
		return tel, nil
	}
	cfg := otelqueuey.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	if _, ok := b.(*runtime.MemoryBackend); ok {
		cfg.System = "queuey.memory" // messaging.system: not a broker
	}
	var stops []func(context.Context) error
	if obs.trace {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(out))
		if err != nil {
			return nil, fmt.Errorf("trace to stdout: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		cfg.TracerProvider = tp
		stops = append(stops, tp.Shutdown)
	}
	if obs.metricsAddr != "" {
		mp, handler, err := otelqueuey.NewPrometheus()
		if err != nil {
			return nil, err
		}
		lis, err := net.Listen("tcp", obs.metricsAddr)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", metricsEnv, obs.metricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", handler)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				fmt.Fprintln(os.Stderr, "emails: metrics server:", err)
			}
		}()
		tel.metrics = "http://" + lis.Addr().String() + "/metrics"
		cfg.MeterProvider = mp
		stops = append(stops, srv.Shutdown, mp.Shutdown)
		if rc, ok := b.(admin.ReadyCounter); ok {
			cfg.Depth = rc
			cfg.DepthQueues = emails.Queues()
		}
	}
	inst, err := otelqueuey.New(cfg)
	if err != nil {
		return nil, err
	}
	tel.inst = inst
	tel.shutdown = func(ctx context.Context) error {
		errs := []error{inst.Close()}
		for _, stop := range stops {
			errs = append(errs, stop(ctx))
		}
		return errors.Join(errs...)
	}
	return tel, nil
}

// producer adds the instrumentation's middleware to p, when there is one.
func (t *telemetry) producer(p *runtime.Producer) {
	if t.inst != nil {
		p.Use(t.inst.ProducerMiddleware())
	}
}

// workerOptions returns the worker options of the instrumentation: its
// observer. (The jobs the worker's schedules enqueue are instrumented by
// giving the worker the instrumented producer, runtime.WithProducer.)
func (t *telemetry) workerOptions() []runtime.WorkerOption {
	if t.inst == nil {
		return nil
	}
	return []runtime.WorkerOption{runtime.WithObserver(t.inst)}
}
