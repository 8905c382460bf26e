package bench

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// BenchmarkWaitPublish enqueues 20,000 jobs with a delay, 64 at once: each
// is a declare of its hold queue (which renews the queue's lease) and a
// confirmed publish to it. Half wait 60s and half 120s, so two hold queues
// are in use, as retries with a few backoff steps are. Nothing is consumed;
// the queues are deleted afterwards.
func BenchmarkWaitPublish(b *testing.B) {
	requireBroker(b)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		total += runWaits(b, uniqueBenchName("waits", i))
	}
	b.ReportMetric(float64(b.N*jobs)/total.Seconds(), "waits/s")
	b.ReportMetric(0, "ns/op")
}

func runWaits(b *testing.B, name string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be, err := rabbitmq.Dial(ctx, amqpURL(), rabbitmq.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	defer brokertest.DeleteQueues(amqpURL(), name, name+".dead", name+".deferred.60000", name+".deferred.120000")
	q := runtime.DefaultQueueConfig(name)
	q.Kind = "Job"
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	var i atomic.Int64
	start := time.Now()
	err = e2e.Concurrently(jobs, 64, func() error {
		delay := time.Minute * time.Duration(1+i.Add(1)%2)
		_, err := runtime.Enqueue(ctx, p, q, e2e.NewJob(), runtime.WithDelay(delay))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
