package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// BenchmarkWaitPublish enqueues 20,000 jobs with a delay, 64 at once: each
// is a confirmed publish to its hold queue and the declare after it on the
// same channel, which renews the queue's lease. Half wait 60s and half 120s, so two hold queues
// are in use, as retries with a few backoff steps are. Nothing is consumed;
// the queues are deleted afterwards.
func BenchmarkWaitPublish(b *testing.B) {
	reportRate(b, "waits", jobs, "waits/s", runWaits)
}

func runWaits(b *testing.B, name string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	defer brokertest.DeleteQueues(amqpURL(), name, name+".dead", name+".deferred.60000", name+".deferred.120000")
	q := runtime.DefaultQueueConfig(name)
	q.Kind = runtime.KindOf[e2e.Job]()
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
