package bench

import (
	"context"
	"testing"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
)

// backlogJobs is how many jobs each backlog holds.
const backlogJobs = 50000

// BenchmarkBacklog measures what the broker holds per waiting job: a
// backlog of 50,000 jobs of a 200-byte payload that no one consumes,
// published by the plain loop, by the plain loop with the header table of
// queuey's former envelope, and by queuey at max_priority 1 and 10. The
// figure is the queue's memory as rabbitmqctl reports it once the queue
// has gone idle, divided by the jobs in it.
//
//	go test -run '^$' -bench Backlog ./bench/
func BenchmarkBacklog(b *testing.B) {
	requireBroker(b)
	for _, c := range []struct {
		name string
		fill func(ctx context.Context, queue string) error
	}{
		{"plain", func(ctx context.Context, queue string) error { return backlogPlain(queue, false).Fill(ctx) }},
		{"plain+former headers", func(ctx context.Context, queue string) error { return backlogPlain(queue, true).Fill(ctx) }},
		{"queuey max_priority=1", func(ctx context.Context, queue string) error { return backlogQueuey(queue, 1).Fill(ctx) }},
		{"queuey max_priority=10", func(ctx context.Context, queue string) error { return backlogQueuey(queue, 10).Fill(ctx) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var perJob []float64
			for i := 0; b.Loop(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), benchWait)
				queue := uniqueBenchName("backlog", i)
				err := c.fill(ctx, queue)
				var mem float64
				if err == nil {
					mem, err = settledMemory(ctx, queue)
				}
				brokertest.DeleteQueues(amqpURL(), queue, queue+rabbitmq.DefaultDeadSuffix)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				perJob = append(perJob, mem/backlogJobs)
			}
			b.ReportMetric(median(perJob), "broker-B/job")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: %.0f bytes of queue memory per waiting job", c.name, median(perJob))
		})
	}
}

func backlogPlain(queue string, headers bool) e2e.Plain {
	return e2e.Plain{URL: amqpURL(), Queue: queue, Jobs: backlogJobs, Window: 1024, Headers: headers}
}

func backlogQueuey(queue string, maxPriority int) e2e.Queuey {
	return e2e.Queuey{URL: amqpURL(), Queue: queue, Jobs: backlogJobs, MaxPriority: maxPriority}
}

// settledMemory returns queue's memory once it has settled: an Erlang
// process's memory is the size of its heap, which grows in steps while
// the queue fills and is cut to what it holds when the idle queue
// hibernates. It reads the memory each second for up to 20 seconds and
// returns the least it saw.
func settledMemory(ctx context.Context, queue string) (float64, error) {
	least := 0.0
	for i := range 20 {
		if i > 0 {
			time.Sleep(time.Second) // the queue hibernates on its own clock; nothing to wait on
		}
		mems, err := queueMemory(ctx, queue)
		if err != nil {
			return 0, err
		}
		if m, ok := mems[queue]; ok && (least == 0 || m < least) {
			least = m
		}
	}
	return least, nil
}
