package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Global limits on RabbitMQ: what a Limit costs a queue whose jobs do
// nothing, and how close a Limit and a Rate shared by three workers come
// to what they allow.
//
//	make bench-limits

// limitJobs is how many jobs BenchmarkLimitOverhead runs each way per
// round.
var limitJobs = flag.Int("limit-jobs", 5000, "jobs of each run of BenchmarkLimitOverhead")

// limitJob is the job of the limits' benchmarks.
type limitJob struct{ N int }

// BenchmarkLimitOverhead: -limit-jobs jobs (5,000) that do nothing, on
// one worker with 50 handler slots (prefetch 50), on a queue without a
// limit and on one with limit=1000 (above the worker's 50, so the limit
// never holds a job back: what it costs is taking and returning a token
// per job), alternately, -rounds times each. Reports each way's jobs/s
// and broker CPU per job (none-, limit-), and the ratio of the rates
// (limit/none), medians of the rounds. A run's clock starts as its worker
// starts, with its jobs enqueued and, for the limited queue, its 1,000
// tokens minted; it stops at the last job's return.
func BenchmarkLimitOverhead(b *testing.B) {
	requireBroker(b)
	var none, limited []e2e.Span
	for i := 0; b.Loop(); i++ {
		for r := range *rounds {
			none = append(none, overheadRun(b, uniqueBenchName("limit-none", i*100+r), 0))
			limited = append(limited, overheadRun(b, uniqueBenchName("limit-1000", i*100+r), 1000))
		}
	}
	rate := func(s e2e.Span) float64 { return s.Rate() }
	cpu := func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) }
	nr, lr := e2e.MedianOf(none, rate), e2e.MedianOf(limited, rate)
	nc, lc := e2e.MedianOf(none, cpu), e2e.MedianOf(limited, cpu)
	b.ReportMetric(nr, "none-jobs/s")
	b.ReportMetric(lr, "limit-jobs/s")
	b.ReportMetric(lr/nr, "ratio")
	b.ReportMetric(nc, "none-broker-µs/job")
	b.ReportMetric(lc, "limit-broker-µs/job")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d jobs doing nothing, concurrency 50: no limit %.0f jobs/s, %.0f broker-µs/job; limit=1000 %.0f jobs/s, %.0f broker-µs/job; ratio (limit/none) %.2f; medians of %d",
		*limitJobs, nr, nc, lr, lc, lr/nr, len(none))
}

// BenchmarkLimitPermits: the limiter alone, no jobs: 50 goroutines of one
// backend each take and give back a permit of limit=1000 (never reached)
// 100 times, -rounds times; reports permits/s and broker CPU per permit,
// medians of the rounds. The tokens are minted before the clock starts.
// -wire logs the frames each way per permit (the mint's among them).
func BenchmarkLimitPermits(b *testing.B) {
	const (
		goroutines = 50
		each       = 100
	)
	requireBroker(b)
	var spans []e2e.Span
	for i := 0; b.Loop(); i++ {
		for r := range *rounds {
			spans = append(spans, permitsRun(b, uniqueBenchName("limit-permits", i*100+r), goroutines, each))
		}
	}
	rate := e2e.MedianOf(spans, e2e.Span.Rate)
	cpu := e2e.MedianOf(spans, func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) })
	b.ReportMetric(rate, "permits/s")
	b.ReportMetric(cpu, "broker-µs/permit")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d goroutines taking and giving back a permit of limit=1000: %.0f permits/s, %.0f broker-µs/permit; medians of %d", goroutines, rate, cpu, len(spans))
}

// permitsRun is one run of BenchmarkLimitPermits on queue name.
func permitsRun(b *testing.B, name string, goroutines, each int) e2e.Span {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	url, logWire := tapped(b, "limit permits")
	be, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ManagementURL: brokertest.ManagementURL()})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.Limit = runtime.KindOf[limitJob](), 1000
	defer brokertest.DeleteQueues(amqpURL(), limitQueueNames(name)...)
	mint(b, ctx, be, q)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	mark := broker.Start()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				p, err := be.AcquirePermit(ctx, q, "")
				if err != nil {
					errs <- err
					return
				}
				p.(runtime.PermitStarter).Started()
				p.Release()
			}
		}()
	}
	wg.Wait()
	span := mark.Stop(goroutines * each)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return logWire(span)
}

// BenchmarkLimitPermitsFloor is the broker's floor under
// BenchmarkLimitPermits, with no queuey code: plain amqp091-go doing what
// a permit of a Limit does, on a queue of 1,000 messages, from 50
// goroutines each on a channel of its own with prefetch 1, 100 times
// each: consume, take the delivery, cancel, reject it with requeue.
// Reports permits/s and broker CPU per permit, medians of -rounds runs;
// -wire logs the frames each way per permit.
func BenchmarkLimitPermitsFloor(b *testing.B) {
	const (
		goroutines = 50
		each       = 100
	)
	requireBroker(b)
	var spans []e2e.Span
	for i := 0; b.Loop(); i++ {
		for r := range *rounds {
			spans = append(spans, permitsFloorRun(b, uniqueBenchName("limit-floor", i*100+r), goroutines, each))
		}
	}
	rate := e2e.MedianOf(spans, e2e.Span.Rate)
	cpu := e2e.MedianOf(spans, func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) })
	b.ReportMetric(rate, "permits/s")
	b.ReportMetric(cpu, "broker-µs/permit")
	b.ReportMetric(0, "ns/op")
	b.Logf("plain amqp091-go, %d channels each consuming, taking, cancelling and rejecting a message: %.0f/s, %.0f broker-µs each; medians of %d", goroutines, rate, cpu, len(spans))
}

// permitsFloorRun is one run of BenchmarkLimitPermitsFloor on queue name.
func permitsFloorRun(b *testing.B, name string, goroutines, each int) e2e.Span {
	url, logWire := tapped(b, "limit permits floor")
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	defer brokertest.DeleteQueues(amqpURL(), name)
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if err := ch.Publish("", name, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("token")}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := ch.QueueDeclarePassive(name, true, false, false, false, nil); err != nil { // after the publishes
		b.Fatal(err)
	}
	chans := make([]*amqp.Channel, goroutines)
	for g := range chans {
		if chans[g], err = conn.Channel(); err != nil {
			b.Fatal(err)
		}
		if err := chans[g].Qos(1, 0, false); err != nil {
			b.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	mark := broker.Start()
	for g, c := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tag := fmt.Sprintf("floor-%d-%d", g, i)
				msgs, err := c.Consume(name, tag, false, false, false, false, nil)
				if err != nil {
					errs <- err
					return
				}
				d := <-msgs
				if err := c.Cancel(tag, false); err != nil {
					errs <- err
					return
				}
				for range msgs {
				}
				if err := d.Reject(true); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	span := mark.Stop(goroutines * each)
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return logWire(span)
}

// overheadRun is one run of BenchmarkLimitOverhead on queue name.
func overheadRun(b *testing.B, name string, limit int) e2e.Span {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.Prefetch, q.Concurrency, q.Limit = runtime.KindOf[limitJob](), prefetch, prefetch, limit
	defer brokertest.DeleteQueues(amqpURL(), limitQueueNames(name)...)
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := runtime.EnqueueMany(ctx, p, q, make([]limitJob, *limitJobs)); err != nil {
		b.Fatal(err)
	}
	if limit > 0 {
		mint(b, ctx, be, q)
	}
	var handled atomic.Int64
	done := make(chan struct{})
	w := runtime.NewWorker(be)
	runtime.Handle(w, q, func(context.Context, limitJob) error {
		if handled.Add(1) == int64(*limitJobs) {
			close(done)
		}
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	mark := broker.Start()
	go func() { errc <- w.Run(runCtx) }()
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("worker ended before its jobs: %v", err)
	case <-ctx.Done():
		b.Fatalf("%d of %d jobs handled in %v", handled.Load(), *limitJobs, benchWait)
	}
	span := mark.Stop(*limitJobs)
	stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return span
}

// mint has be's Limiter mint q's tokens, outside the clock: the first
// permit asked for starts the reconcile, and is granted once the tokens
// exist (all of them: one transaction mints them).
func mint(b *testing.B, ctx context.Context, be *rabbitmq.Backend, q runtime.QueueConfig) {
	pm, err := be.AcquirePermit(ctx, q.WithDefaults(), "")
	if err != nil {
		b.Fatal(err)
	}
	pm.Release()
}

// limitQueueNames are queue name's broker queues and those of its
// global limits.
func limitQueueNames(name string) []string {
	return []string{
		name, name + ".dead",
		"queuey.limit." + name, "queuey.limit-ledger." + name,
		"queuey.rate." + name, "queuey.rate-ledger." + name, "queuey.rate-s." + name,
	}
}

// BenchmarkLimitAcrossWorkers: limit=10 over three workers (each on a
// connection of its own, 20 handler slots each), 300 jobs of 100ms: the
// jobs/s from the first start to the last end, and its ratio to the
// limit's ceiling of 10 ÷ 100ms = 100 jobs/s (ceiling-ratio); most-at-once
// is the most handlers running at one moment (10 when the limit is
// reached and held). Medians of -rounds runs.
func BenchmarkLimitAcrossWorkers(b *testing.B) {
	const (
		limit = 10
		jobs  = 300
		work  = 100 * time.Millisecond
	)
	requireBroker(b)
	var rates, mosts []float64
	for i := 0; b.Loop(); i++ {
		for r := range *rounds {
			runs := acrossWorkers(b, uniqueBenchName("limit-across", i*100+r), jobs, work, func(q *runtime.QueueConfig) { q.Limit = limit })
			rates = append(rates, float64(jobs)/runs.lastEnd.Sub(runs.firstStart).Seconds())
			mosts = append(mosts, float64(runs.most))
		}
	}
	ceiling := float64(limit) / work.Seconds()
	rate := e2e.Median(rates)
	b.ReportMetric(rate, "jobs/s")
	b.ReportMetric(rate/ceiling, "ceiling-ratio")
	b.ReportMetric(e2e.Median(mosts), "most-at-once")
	b.ReportMetric(0, "ns/op")
	b.Logf("limit=%d over 3 workers, %d jobs of %v: %.1f jobs/s, %.2f of the ceiling of %.0f jobs/s; most at once %.0f; medians of %d",
		limit, jobs, work, rate, rate/ceiling, ceiling, e2e.Median(mosts), len(rates))
}

// BenchmarkRateAcrossWorkers: rate=50/s over three workers (each on a
// connection of its own, 20 handler slots each), 300 jobs of 5ms: the
// starts per second after the first second's 50 (the tokens ready at the
// start), from the first start to the last, and its ratio to 50/s
// (rate-ratio). Medians of -rounds runs.
func BenchmarkRateAcrossWorkers(b *testing.B) {
	const (
		n    = 50
		jobs = 300
	)
	requireBroker(b)
	var rates []float64
	for i := 0; b.Loop(); i++ {
		for r := range *rounds {
			runs := acrossWorkers(b, uniqueBenchName("rate-across", i*100+r), jobs, 5*time.Millisecond, func(q *runtime.QueueConfig) {
				q.Rate = runtime.Rate{N: n, Per: time.Second}
			})
			rates = append(rates, float64(jobs-n)/runs.lastStart.Sub(runs.firstStart).Seconds())
		}
	}
	rate := e2e.Median(rates)
	b.ReportMetric(rate, "starts/s")
	b.ReportMetric(rate/n, "rate-ratio")
	b.ReportMetric(0, "ns/op")
	b.Logf("rate=%d/s over 3 workers, %d jobs: %.1f starts/s after the first second, %.2f of the rate; medians of %d", n, jobs, rate, rate/n, len(rates))
}

// acrossRuns is what acrossWorkers saw of its jobs' runs.
type acrossRuns struct {
	firstStart, lastStart, lastEnd time.Time
	most                           int
}

// acrossWorkers runs jobs jobs of work each on queue name, shaped by set,
// over three workers each on a backend (a connection) of its own with 20
// handler slots, and returns when the first and last started, when the
// last ended, and the most that ran at once.
func acrossWorkers(b *testing.B, name string, jobs int, work time.Duration, set func(*runtime.QueueConfig)) acrossRuns {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.Prefetch, q.Concurrency = runtime.KindOf[limitJob](), 20, 20
	set(&q)
	defer brokertest.DeleteQueues(amqpURL(), limitQueueNames(name)...)

	var (
		mu      sync.Mutex
		runs    acrossRuns
		running int
		ended   int
		done    = make(chan struct{})
	)
	handle := func(ctx context.Context, _ limitJob) error {
		mu.Lock()
		now := time.Now()
		if runs.firstStart.IsZero() {
			runs.firstStart = now
		}
		runs.lastStart = now
		running++
		runs.most = max(runs.most, running)
		mu.Unlock()
		t := time.NewTimer(work)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		mu.Lock()
		defer mu.Unlock()
		running--
		ended++
		runs.lastEnd = time.Now()
		if ended == jobs {
			close(done)
		}
		return nil
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		be := dialBroker(b, ctx, rabbitmq.Options{})
		defer be.Close()
		w := runtime.NewWorker(be)
		runtime.Handle(w, q, handle)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(runCtx); err != nil {
				errs <- err
			}
		}()
	}
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := runtime.EnqueueMany(ctx, p, q, make([]limitJob, jobs)); err != nil {
		b.Fatal(err)
	}
	select {
	case <-done:
	case err := <-errs:
		b.Fatalf("a worker ended before its jobs: %v", err)
	case <-ctx.Done():
		b.Fatalf("jobs not handled in %v", benchWait)
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return runs
}
