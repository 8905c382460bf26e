package bench

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// scaleDefers is how many jobs each defer once in the deferral rows.
const scaleDefers = 1000

// BenchmarkScale measures one worker and one producer at scale, a row
// each (make bench-scale runs them once):
//
//   - defer/distinct: 1,000 jobs each return runtime.Defer with a delay of
//     its own (1s, 2s, ... 1,000s, so a hold queue each): deferrals settled
//     per second, from the worker's start to the last deferral confirmed.
//   - defer/shared: the same with one delay (1,000s) for every job.
//   - start/1000 and start/2100: a worker over that many existing queues,
//     from Run to every queue consuming; then the goroutines it holds idle
//     (over those before the backend was dialled), and its shutdown: how
//     long Run takes to return after its context ends, and how many
//     warnings it logs meanwhile (none on a clean stop).
//   - declare/1000/max_priority=0 and =10: a producer declaring 1,000 new
//     queues (each with its dead-letter queue).
//   - declare/1000/existing: a producer, on a backend of its own, declaring
//     again 1,000 queues that exist (as each start of a worker does).
//
// Queues are deleted afterwards, outside the clock.
func BenchmarkScale(b *testing.B) {
	b.Run("defer/distinct", func(b *testing.B) {
		benchDefers(b, func(n int) time.Duration { return time.Duration(n+1) * time.Second })
	})
	b.Run("defer/shared", func(b *testing.B) {
		benchDefers(b, func(int) time.Duration { return scaleDefers * time.Second })
	})
	for _, n := range []int{1000, 2100} {
		b.Run(fmt.Sprintf("start/%d", n), func(b *testing.B) { benchStart(b, n) })
	}
	for _, mp := range []int{runtime.NoPriority, runtime.DefaultMaxPriority} {
		b.Run(fmt.Sprintf("declare/1000/max_priority=%d", max(mp, 0)), func(b *testing.B) {
			reportRate(b, "scale-declare", 1000, "queues/s", func(b *testing.B, prefix string) time.Duration {
				return declareNew(b, prefix, 1000, mp)
			})
		})
	}
	b.Run("declare/1000/existing", func(b *testing.B) {
		reportRate(b, "scale-redeclare", 1000, "queues/s", func(b *testing.B, prefix string) time.Duration {
			return declareExisting(b, prefix, 1000)
		})
	})
}

// scaleJob is the job of the deferral rows: its number picks its delay.
type scaleJob struct{ N int }

// deferCounter counts the deferrals a worker settled and says when it
// reached want.
type deferCounter struct {
	want int64
	n    atomic.Int64
	done chan struct{}
	// first is when the first deferral settled, in Unix nanoseconds.
	first atomic.Int64
}

func (c *deferCounter) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }

func (c *deferCounter) Outcome(_ context.Context, o runtime.Outcome) {
	if o.Kind != runtime.OutcomeDeferred {
		return
	}
	n := c.n.Add(1)
	if n == 1 {
		c.first.Store(time.Now().UnixNano())
	}
	if n == c.want {
		close(c.done)
	}
}

func benchDefers(b *testing.B, delayOf func(n int) time.Duration) {
	reportRate(b, "scale-defer", scaleDefers, "deferrals/s", func(b *testing.B, name string) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), benchWait)
		defer cancel()
		be := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
		defer be.Close()
		q := runtime.DefaultQueueConfig(name)
		q.Kind, q.Prefetch, q.Concurrency = runtime.KindOf[scaleJob](), 100, 100
		names := []string{q.Name, q.Name + ".dead"}
		for n := range scaleDefers {
			names = append(names, fmt.Sprintf("%s.deferred.%d", q.Name, delayOf(n).Milliseconds()))
		}
		defer brokertest.DeleteQueues(amqpURL(), names...)
		p, err := runtime.NewProducer(ctx, be, q)
		if err != nil {
			b.Fatal(err)
		}
		jobs := make([]scaleJob, scaleDefers)
		for n := range jobs {
			jobs[n].N = n
		}
		if _, err := runtime.EnqueueMany(ctx, p, q, jobs); err != nil {
			b.Fatal(err)
		}
		c := &deferCounter{want: scaleDefers, done: make(chan struct{})}
		w := runtime.NewWorker(be, runtime.WithObserver(c))
		runtime.Handle(w, q, func(_ context.Context, j scaleJob) error {
			return runtime.Defer(delayOf(j.N))
		})
		runCtx, stop := context.WithCancel(ctx)
		errc := make(chan error, 1)
		start := time.Now()
		go func() { errc <- w.Run(runCtx) }()
		select {
		case <-c.done:
		case err := <-errc:
			b.Fatalf("worker ended before its deferrals: %v", err)
		case <-ctx.Done():
			b.Fatalf("%d of %d deferrals settled within %v", c.n.Load(), scaleDefers, benchWait)
		}
		elapsed := time.Since(start)
		stop()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		return elapsed
	})
}

// consumeCounter tells when a number of consumers have started.
type consumeCounter struct {
	*rabbitmq.Backend
	want     int64
	started  atomic.Int64
	allReady chan struct{}
}

func (c *consumeCounter) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	s, err := c.Backend.Consume(ctx, q)
	if err == nil && c.started.Add(1) == c.want {
		close(c.allReady)
	}
	return s, err
}

func benchStart(b *testing.B, n int) {
	requireBroker(b)
	var start, shutdown time.Duration
	var goroutines, warnings int
	for i := 0; b.Loop(); i++ {
		r := startOnce(b, uniqueBenchName("scale-start", i), n)
		start += r.start
		shutdown += r.shutdown
		goroutines += r.goroutines
		warnings += r.warnings
	}
	b.ReportMetric(start.Seconds()/float64(b.N), "start-s")
	b.ReportMetric(float64(goroutines)/float64(b.N), "idle-goroutines")
	b.ReportMetric(shutdown.Seconds()/float64(b.N), "shutdown-s")
	b.ReportMetric(float64(warnings)/float64(b.N), "shutdown-warnings")
	b.ReportMetric(0, "ns/op")
}

type startResult struct {
	start, shutdown      time.Duration
	goroutines, warnings int
}

func startOnce(b *testing.B, prefix string, n int) startResult {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	queues, del := existingQueues(b, ctx, prefix, n, runtime.KindOf[e2e.Job]())
	defer del()

	warns := &warnCounter{}
	before := goruntime.NumGoroutine()
	be := &consumeCounter{Backend: dialBroker(b, ctx, rabbitmq.Options{Logger: slog.New(warns)}), want: int64(n), allReady: make(chan struct{})}
	defer be.Close()
	w := runtime.NewWorker(be)
	for _, q := range queues {
		runtime.Handle(w, q, func(context.Context, e2e.Job) error { return nil })
	}
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	began := time.Now()
	go func() { errc <- w.Run(runCtx) }()
	select {
	case <-be.allReady:
	case err := <-errc:
		b.Fatalf("worker ended before consuming: %v", err)
	case <-ctx.Done():
		b.Fatalf("%d of %d queues consuming within %v", be.started.Load(), n, benchWait)
	}
	r := startResult{start: time.Since(began)}
	time.Sleep(time.Second) // settle into idle before counting: a measurement, not a synchronisation
	r.goroutines = goruntime.NumGoroutine() - before
	stopped := time.Now()
	stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	r.shutdown = time.Since(stopped)
	r.warnings = int(warns.n.Load())
	return r
}

func declareNew(b *testing.B, prefix string, n, maxPriority int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
	defer be.Close()
	queues, names := scaleQueues(prefix, n, "", maxPriority)
	defer brokertest.DeleteQueues(amqpURL(), names...)
	start := time.Now()
	if _, err := runtime.NewProducer(ctx, be, queues...); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// declareExisting declares n queues, then times a producer on another
// backend declaring them again.
func declareExisting(b *testing.B, prefix string, n int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	queues, del := existingQueues(b, ctx, prefix, n, "")
	defer del()
	be := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
	defer be.Close()
	start := time.Now()
	if _, err := runtime.NewProducer(ctx, be, queues...); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// existingQueues declares n queues named prefix.0, prefix.1, ... of kind
// (each with its dead-letter queue) on a backend of its own, and returns
// their configs and a func that deletes them.
func existingQueues(b *testing.B, ctx context.Context, prefix string, n int, kind string) ([]runtime.QueueConfig, func()) {
	b.Helper()
	queues, names := scaleQueues(prefix, n, kind, runtime.DefaultMaxPriority)
	del := func() { brokertest.DeleteQueues(amqpURL(), names...) }
	declarer := dialBroker(b, ctx, rabbitmq.Options{Logger: quietLogger()})
	_, err := runtime.NewProducer(ctx, declarer, queues...)
	declarer.Close()
	if err != nil {
		del()
		b.Fatal(err)
	}
	return queues, del
}

// scaleQueues returns the configs of n queues named prefix.0, prefix.1,
// ... of kind and maxPriority, and their names with their dead-letter
// queues'.
func scaleQueues(prefix string, n int, kind string, maxPriority int) ([]runtime.QueueConfig, []string) {
	queues := make([]runtime.QueueConfig, n)
	names := make([]string, 0, 2*n)
	for i := range queues {
		queues[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%d", prefix, i))
		queues[i].Kind = kind
		queues[i].MaxPriority = maxPriority
		names = append(names, queues[i].Name, queues[i].Name+".dead")
	}
	return queues, names
}

// warnCounter is a slog handler that counts records at warning level and
// above and writes nothing.
type warnCounter struct{ n atomic.Int64 }

func (h *warnCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnCounter) WithGroup(string) slog.Handler      { return h }

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
