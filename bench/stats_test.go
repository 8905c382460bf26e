package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// BenchmarkQueueStats measures what queuey queues and each of the
// dashboard's samples cost over many queues: admin.Inspector.QueueStats of
// 2,100 existing queues (each with its dead-letter queue, none paused), on
// a backend that declared none of them, as the command's is. It reports
// seconds per call (stats-s).
func BenchmarkQueueStats(b *testing.B) {
	requireBroker(b)
	const n = 2100
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	prefix := uniqueBenchName("stats", 0)
	queues := make([]runtime.QueueConfig, n)
	stats := make([]admin.Queue, n)
	var names []string
	for i := range queues {
		queues[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%d", prefix, i))
		stats[i] = admin.Queue{Name: queues[i].Name}
		names = append(names, queues[i].Name, queues[i].Name+".dead")
	}
	defer brokertest.DeleteQueues(amqpURL(), names...)
	declarer := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
	if _, err := runtime.NewProducer(ctx, declarer, queues...); err != nil {
		b.Fatal(err)
	}
	declarer.Close()
	be := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
	defer be.Close()
	var total time.Duration
	for b.Loop() {
		began := time.Now()
		st, err := be.QueueStats(ctx, stats...)
		total += time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		if len(st) != n {
			b.Fatalf("%d stats, want %d", len(st), n)
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "stats-s")
	b.ReportMetric(0, "ns/op")
}
