package otelqueuey_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestDepthLabelsRabbitMQ: queuey_queue_depth has the labels queue and
// kind, as every metric does, for a queue of DepthQueues counted on the
// broker before any of its jobs is seen here, and for one whose jobs
// were: the kind comes from the config, or from the first job seen.
func TestDepthLabelsRabbitMQ(t *testing.T) {
	url := brokertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	base := fmt.Sprintf("otelqueuey.depth.%d", time.Now().UnixNano())
	early := runtime.QueueConfig{Name: base + ".early", Kind: runtime.KindOf[ping]()}
	seen := runtime.QueueConfig{Name: base + ".seen", Kind: runtime.KindOf[ping]()}
	t.Cleanup(func() { deleteQueues(t, url, early.Name, early.Name+".dead", seen.Name, seen.Name+".dead") })

	// Jobs on the early queue from a producer this instrumentation does
	// not see: only DepthQueues tells it of the queue.
	plain, err := runtime.NewProducer(ctx, b, early)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.EnqueueMany(ctx, plain, early, []ping{{N: 1}, {N: 2}, {N: 3}}); err != nil {
		t.Fatal(err)
	}
	mp, handler, err := otelqueuey.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	tel := newTelemetry(t, otelqueuey.Config{MeterProvider: mp, Depth: b, DepthQueues: []runtime.QueueConfig{early}})
	p, err := runtime.NewProducer(ctx, b, seen)
	if err != nil {
		t.Fatal(err)
	}
	p.Use(tel.inst.ProducerMiddleware())
	if _, err := runtime.Enqueue(ctx, p, seen, ping{N: 1}); err != nil {
		t.Fatal(err)
	}

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
	for _, want := range []string{
		`queuey_queue_depth{kind="otelqueuey_test.ping",queue="` + early.Name + `"} 3`,
		`queuey_queue_depth{kind="otelqueuey_test.ping",queue="` + seen.Name + `"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
