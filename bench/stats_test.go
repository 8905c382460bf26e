package bench

import (
	"context"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
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
	queues, del := existingQueues(b, ctx, uniqueBenchName("stats", 0), n, "")
	defer del()
	stats := make([]admin.Queue, n)
	for i, q := range queues {
		stats[i] = admin.Queue{Name: q.Name}
	}
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
