package otelqueuey_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// TestPrometheusScrape runs a job that succeeds and one that is
// dead-lettered, leaves two jobs waiting on another queue, and scrapes
// /metrics over HTTP.
func TestPrometheusScrape(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
	t.Cleanup(func() { b.Close() })
	mp, handler, err := otelqueuey.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	tel := newTelemetry(t, otelqueuey.Config{MeterProvider: mp, Depth: b})
	q := runtime.QueueConfig{Name: "prom", Kind: runtime.KindOf[ping]()}
	p, w, settled := instrumented(t, tel, b, q)
	runtime.Handle(w, q, func(ctx context.Context, j ping) error {
		if j.N == 2 {
			return runtime.Permanent(errors.New("bounce"))
		}
		return nil
	})
	if _, err := runtime.EnqueueMany(context.Background(), p, q, []ping{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	waiting := runtime.QueueConfig{Name: "prom.waiting", Kind: runtime.KindOf[ping]()}
	pw, err := runtime.NewProducer(context.Background(), b, waiting)
	if err != nil {
		t.Fatal(err)
	}
	pw.Use(tel.inst.ProducerMiddleware())
	if _, err := runtime.EnqueueMany(context.Background(), pw, waiting, []ping{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	recvT(t, settled)
	recvT(t, settled)

	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(body), "\n") {
		lines[l] = true
	}
	for _, want := range []string{
		`# TYPE queuey_jobs_enqueued_total counter`,
		`queuey_jobs_enqueued_total{kind="otelqueuey_test.ping",queue="prom"} 2`,
		`queuey_jobs_enqueued_total{kind="otelqueuey_test.ping",queue="prom.waiting"} 2`,
		`queuey_jobs_started_total{kind="otelqueuey_test.ping",queue="prom"} 2`,
		`queuey_jobs_succeeded_total{kind="otelqueuey_test.ping",queue="prom"} 1`,
		`queuey_jobs_failed_total{kind="otelqueuey_test.ping",queue="prom"} 1`,
		`queuey_jobs_dead_lettered_total{kind="otelqueuey_test.ping",queue="prom"} 1`,
		`queuey_jobs_in_flight{kind="otelqueuey_test.ping",queue="prom"} 0`,
		`# TYPE queuey_job_duration_seconds histogram`,
		`queuey_job_duration_seconds_count{kind="otelqueuey_test.ping",queue="prom"} 2`,
		`queuey_job_queue_latency_seconds_count{kind="otelqueuey_test.ping",queue="prom"} 2`,
		`queuey_queue_depth{kind="otelqueuey_test.ping",queue="prom"} 0`,
		`queuey_queue_depth{kind="otelqueuey_test.ping",queue="prom.waiting"} 2`,
	} {
		if !lines[want] {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	for _, absent := range []string{"queuey_jobs_retried_total", "queuey_jobs_deferred_total"} {
		if strings.Contains(string(body), absent) {
			t.Errorf("/metrics has %s, though no job was retried or deferred", absent)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
