package outbox_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// benchBatch is the jobs per transaction (or per EnqueueMany) of the
// batched benchmarks.
const benchBatch = 100

// BenchmarkOutbox measures jobs/s from enqueue (committed, through the
// outbox) to handled on RabbitMQ, against enqueueing directly, one job per
// enqueue (8 goroutines) and benchBatch per EnqueueMany.
func BenchmarkOutbox(b *testing.B) {
	for _, bc := range []struct {
		name   string
		outbox bool
		batch  int
	}{
		{"direct/single", false, 1},
		{"outbox/single", true, 1},
		{"direct/batched", false, benchBatch},
		{"outbox/batched", true, benchBatch},
	} {
		b.Run(bc.name, func(b *testing.B) {
			pool, _ := database(b)
			be := dial(b)
			q := testQueue(b)
			q.Prefetch = 500
			declare(b, be, q)
			var handledN atomic.Int64
			done := make(chan struct{})
			var want atomic.Int64
			want.Store(-1)
			brokertest.RunWorker(b, be, q, func(ctx context.Context, _ ping) error {
				if n := handledN.Add(1); n == want.Load() {
					close(done)
				}
				return nil
			})
			if bc.outbox {
				brokertest.Run(b, &outbox.Relay{Pool: pool, Backend: be, Logger: quiet()})
			}
			direct := runtime.NewProducerUndeclared(be)
			ctx := context.Background()
			jobs := make([]ping, bc.batch)
			want.Store(int64(b.N * bc.batch))
			b.ResetTimer()
			start := time.Now()
			b.SetParallelism(8) // 8 × GOMAXPROCS enqueuers
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					switch {
					case !bc.outbox && bc.batch == 1:
						_, err = runtime.Enqueue(ctx, direct, q, ping{})
					case !bc.outbox:
						_, err = runtime.EnqueueMany(ctx, direct, q, jobs)
					default:
						err = inTx(ctx, pool, true, func(tx pgx.Tx) error {
							p := outbox.Producer(outbox.PgxTx(tx))
							if bc.batch == 1 {
								_, err := runtime.Enqueue(ctx, p, q, ping{})
								return err
							}
							_, err := runtime.EnqueueMany(ctx, p, q, jobs)
							return err
						})
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			select {
			case <-done:
			case <-time.After(5 * time.Minute):
				b.Fatalf("%d of %d jobs handled", handledN.Load(), want.Load())
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(want.Load())/elapsed.Seconds(), "jobs/s")
		})
	}
}

// BenchmarkOutboxLatency measures, on an idle relay, the time from a
// transaction's commit to its job's handler starting: p50 and p99.
func BenchmarkOutboxLatency(b *testing.B) {
	pool, _ := database(b)
	be := dial(b)
	q := testQueue(b)
	declare(b, be, q)
	started := make(chan time.Time, 1)
	brokertest.RunWorker(b, be, q, func(ctx context.Context, _ ping) error {
		started <- time.Now()
		return nil
	})
	brokertest.Run(b, &outbox.Relay{Pool: pool, Backend: be, Logger: quiet()})
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, ping{}); err != nil {
			b.Fatal(err)
		}
		committed := time.Now()
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-started:
			lat = append(lat, at.Sub(committed))
		case <-time.After(wait):
			b.Fatal("job not handled")
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// drainRows is how many committed rows BenchmarkOutboxRelay drains.
const drainRows = 20000

// BenchmarkOutboxRelay measures the relay alone: 20,000 jobs committed to
// the outbox before the clock starts (in transactions of benchBatch), then
// a relay started and timed until every job is handled. Set it beside
// BenchmarkOutbox/direct/single, the rate of direct enqueues.
func BenchmarkOutboxRelay(b *testing.B) {
	pool, _ := database(b)
	be := dial(b)
	q := testQueue(b)
	q.Prefetch = 500
	declare(b, be, q)
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		jobs := make([]ping, benchBatch)
		for range drainRows / benchBatch {
			err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
				_, err := runtime.EnqueueMany(ctx, outbox.Producer(outbox.PgxTx(tx)), q, jobs)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		var handled atomic.Int64
		done := make(chan struct{})
		stopWorker := brokertest.RunWorker(b, be, q, func(context.Context, ping) error {
			if handled.Add(1) == drainRows {
				close(done)
			}
			return nil
		})
		b.StartTimer()
		start := time.Now()
		stopRelay := brokertest.Run(b, &outbox.Relay{Pool: pool, Backend: be, Logger: quiet()})
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			b.Fatalf("%d of %d jobs handled", handled.Load(), drainRows)
		}
		total += time.Since(start)
		b.StopTimer()
		stopRelay()
		stopWorker()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*drainRows)/total.Seconds(), "jobs/s")
	b.ReportMetric(0, "ns/op")
}
