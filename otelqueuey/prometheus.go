package otelqueuey

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// NewPrometheus returns a MeterProvider whose metrics handler serves in the
// Prometheus text format, for a /metrics scrape endpoint: give the provider
// to Config.MeterProvider (and to anything else whose metrics should be
// scraped there). Names follow Prometheus conventions: queuey.jobs.enqueued
// is served as queuey_jobs_enqueued_total, queuey.job.duration as the
// histogram queuey_job_duration_seconds. Options are passed to the
// provider, after the Prometheus reader.
//
// Shut the provider down when done; the handler then serves no queuey
// metrics.
func NewPrometheus(opts ...sdkmetric.Option) (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("otelqueuey: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(append([]sdkmetric.Option{sdkmetric.WithReader(exp)}, opts...)...)
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
