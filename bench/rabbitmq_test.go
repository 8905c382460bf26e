// Package bench measures queuey on a local RabbitMQ against raw amqp091-go
// doing the same work: persistent, confirmed, mandatory publishes and
// manually acked deliveries, 20,000 jobs with concurrency = prefetch = 50.
//
// The raw loop carries the same metadata as queuey's envelope: five headers
// (attempt, max attempts, priority, enqueue time, queue), a message id, a
// type and a timestamp, since a broker spends much of its time per message
// on headers; only the header names differ (queuey's are prefixed
// x-queuey-). Both sides time the same work: each side's consumer is
// running before its clock starts (queuey's worker has declared, consumed
// and handled one warm-up job), and the clock stops when the last job is
// handled.
//
//	go test -run '^$' -bench . ./bench/
package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

const (
	jobs      = 20000
	prefetch  = 50
	inFlight  = 64 // publishes awaiting confirms at once, for both sides
	benchWait = 5 * time.Minute
)

type benchJob struct {
	To      string
	Subject string
	N       int
}

func amqpURL() string { return brokertest.URL() }

func requireBroker(b *testing.B) { b.Helper(); brokertest.Require(b) }

// BenchmarkEndToEnd enqueues 20,000 jobs and runs a no-op handler on each
// with prefetch 50, through the typed runtime path, and the same with raw
// amqp091-go, reporting both rates and their ratio.
func BenchmarkEndToEnd(b *testing.B) {
	requireBroker(b)
	compare(b, true, false)
}

// BenchmarkPublish enqueues 20,000 jobs without consuming them, through the
// typed runtime path and with raw amqp091-go.
func BenchmarkPublish(b *testing.B) {
	requireBroker(b)
	compare(b, false, false)
}

// BenchmarkEndToEndBatch is BenchmarkEndToEnd with one producer enqueueing
// through runtime.EnqueueMany (generated EnqueueManyX) in batches of
// inFlight: the shape of the raw loop, one goroutine with many publishes
// in flight.
func BenchmarkEndToEndBatch(b *testing.B) {
	requireBroker(b)
	compare(b, true, true)
}

// BenchmarkPublishBatch is BenchmarkPublish through runtime.EnqueueMany in
// batches of inFlight from one goroutine.
func BenchmarkPublishBatch(b *testing.B) {
	requireBroker(b)
	compare(b, false, true)
}

// compare times the raw loop and queuey on the same work, alternately;
// batch enqueues through EnqueueMany instead of concurrent Enqueue calls.
func compare(b *testing.B, consume, batch bool) {
	var ours, raw time.Duration
	for i := 0; b.Loop(); i++ {
		raw += runRaw(b, fmt.Sprintf("queuey-bench.raw.%d.%d", time.Now().UnixNano(), i), consume)
		ours += runQueuey(b, fmt.Sprintf("queuey-bench.ours.%d.%d", time.Now().UnixNano(), i), consume, batch)
	}
	n := float64(b.N * jobs)
	oursRate := n / ours.Seconds()
	rawRate := n / raw.Seconds()
	b.ReportMetric(oursRate, "queuey-jobs/s")
	b.ReportMetric(rawRate, "raw-jobs/s")
	b.ReportMetric(oursRate/rawRate, "ratio")
	b.ReportMetric(0, "ns/op") // each op is two runs of 20,000 jobs; the rates say it
}

func deleteQueues(b *testing.B, names ...string) {
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			b.Fatal(err)
		}
		_, _ = ch.QueueDelete(name, false, false, false)
		ch.Close()
	}
}

// runQueuey times jobs enqueues (and handles, when consume) through
// runtime.Enqueue and runtime.Handle, as generated code does.
func runQueuey(b *testing.B, name string, consume, batch bool) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	opts := rabbitmq.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	be, err := rabbitmq.Dial(ctx, amqpURL(), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	defer deleteQueues(b, name, name+".dead")
	q := runtime.DefaultQueueConfig(name)
	q.Kind = "benchJob"
	q.Prefetch, q.Concurrency = prefetch, prefetch
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	var handled atomic.Int64
	all := make(chan struct{})
	warm := make(chan struct{})
	wctx, stop := context.WithCancel(ctx)
	werr := make(chan error, 1)
	if consume {
		// The worker starts, declares, consumes and handles a warm-up job
		// (N = 0) before the clock starts, as the raw consumer runs before
		// its clock does.
		w := runtime.NewWorker(be, runtime.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		runtime.Handle(w, q, func(_ context.Context, j benchJob) error {
			if j.N == 0 {
				close(warm)
				return nil
			}
			if handled.Add(1) == jobs {
				close(all)
			}
			return nil
		})
		go func() { werr <- w.Run(wctx) }()
		if _, err := runtime.Enqueue(ctx, p, q, benchJob{To: "a@b.c", Subject: "warm-up", N: 0}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-warm:
		case err := <-werr:
			b.Fatalf("worker ended before the warm-up job: %v", err)
		case <-ctx.Done():
			b.Fatalf("warm-up job not handled within %v", benchWait)
		}
	}

	start := time.Now()
	if batch {
		enqueueBatches(b, func(batch []benchJob) error {
			_, err := runtime.EnqueueMany(ctx, p, q, batch)
			return err
		})
	} else {
		enqueueAll(b, func(i int) error {
			_, err := runtime.Enqueue(ctx, p, q, benchJob{To: "a@b.c", Subject: "hello", N: i})
			return err
		})
	}
	if consume {
		select {
		case <-all:
		case <-ctx.Done():
			b.Fatalf("handled %d of %d jobs within %v", handled.Load(), jobs, benchWait)
		}
	}
	elapsed := time.Since(start)
	stop()
	if consume {
		<-werr
	}
	return elapsed
}

// runRaw does the same work with amqp091-go alone: one publishing and one
// consuming connection, a confirm-mode channel with inFlight publishes
// pipelined, mandatory and persistent, and manual acks. Its messages carry
// what any job system must (attempt, max attempts, priority, enqueue time,
// queue), since a broker spends most of its time per message on headers.
func runRaw(b *testing.B, name string, consume bool) time.Duration {
	pubConn, err := amqp.Dial(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	defer pubConn.Close()
	conConn, err := amqp.Dial(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	defer conConn.Close()
	defer deleteQueues(b, name)
	pch, err := pubConn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(10)}); err != nil {
		b.Fatal(err)
	}
	if err := pch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	returns := pch.NotifyReturn(make(chan amqp.Return, 1))
	body, err := msgpack.Marshal(&benchJob{To: "a@b.c", Subject: "hello", N: 1})
	if err != nil {
		b.Fatal(err)
	}

	all := make(chan struct{})
	if consume {
		cch, err := conConn.Channel()
		if err != nil {
			b.Fatal(err)
		}
		if err := cch.Qos(prefetch, 0, false); err != nil {
			b.Fatal(err)
		}
		msgs, err := cch.Consume(name, "", false, false, false, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			n := 0
			for m := range msgs {
				var j benchJob
				_ = msgpack.Unmarshal(m.Body, &j)
				_ = m.Ack(false)
				if n++; n == jobs {
					close(all)
				}
			}
		}()
	}

	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	start := time.Now()
	window := make([]*amqp.DeferredConfirmation, 0, inFlight)
	for i := range jobs {
		now := time.Now()
		if len(window) == inFlight {
			if ok, err := window[0].WaitContext(ctx); !ok || err != nil {
				b.Fatalf("raw publish not confirmed: %v", err)
			}
			window = window[1:]
		}
		dc, err := pch.PublishWithDeferredConfirmWithContext(ctx, "", name, true, false, amqp.Publishing{
			ContentType:  "application/msgpack",
			DeliveryMode: amqp.Persistent,
			MessageId:    fmt.Sprint(i),
			Type:         "benchJob",
			Timestamp:    now,
			Headers:      meta(name, now),
			Body:         body,
		})
		if err != nil {
			b.Fatal(err)
		}
		window = append(window, dc)
	}
	for _, dc := range window {
		if ok, err := dc.WaitContext(ctx); !ok || err != nil {
			b.Fatalf("raw publish not confirmed: %v", err)
		}
	}
	select {
	case r := <-returns:
		b.Fatalf("raw publish returned: %s", r.ReplyText)
	default:
	}
	if consume {
		select {
		case <-all:
		case <-ctx.Done():
			b.Fatalf("raw consumer did not get %d jobs within %v", jobs, benchWait)
		}
	}
	return time.Since(start)
}

// meta is the job metadata the raw loop carries, as a hand-written job
// system on amqp091-go would.
func meta(queue string, now time.Time) amqp.Table {
	return amqp.Table{
		"attempt":      int64(1),
		"max-attempts": int64(5),
		"priority":     int64(0),
		"enqueued-at":  now.UnixNano(),
		"queue":        queue,
	}
}

// enqueueAll calls enqueue for jobs 1..jobs from inFlight goroutines at
// once, as producers of a synchronous API keep that many publishes in
// flight.
func enqueueAll(b *testing.B, enqueue func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range inFlight {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > jobs {
					return
				}
				if err := enqueue(int(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// enqueueBatches calls enqueue for jobs 1..jobs in batches of inFlight,
// one after another from one goroutine.
func enqueueBatches(b *testing.B, enqueue func(batch []benchJob) error) {
	batch := make([]benchJob, 0, inFlight)
	for i := 1; i <= jobs; i++ {
		batch = append(batch, benchJob{To: "a@b.c", Subject: "hello", N: i})
		if len(batch) == inFlight || i == jobs {
			if err := enqueue(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
