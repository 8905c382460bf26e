package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Lateness of waits on the delay ladder (make bench-lateness): a run
// takes as long as its longest delay, about 17 minutes, so it is a
// benchmark of its own, which make bench-scale leaves out.
const (
	latenessWaits   = 20000            // waits enqueued, latenessRate a second
	latenessRate    = 2000             // waits a second
	latenessLongest = 1000             // delays are 1s, 2s, ... latenessLongest s
	latenessSlack   = 10 * time.Minute // beyond the longest delay, for the last waits to arrive
)

// latenessJob carries when it is due, in Unix nanoseconds: the time just
// before its enqueue plus its delay.
type latenessJob struct {
	N     int
	Due   int64
	Delay time.Duration
}

// BenchmarkLadderLateness enqueues 20,000 jobs at 2,000 a second, each
// with a delay of 1s ... 1,000s (each delay 20 times, in a scattered
// order), on a ladder-mode queue of each type at the default granularity
// (1s), and a worker records how late each runs: the time it starts less
// the time before its enqueue plus its delay. It reports the lateness at
// the median, the 99th percentile and the largest, the enqueue rate
// reached, the broker's CPU per wait over the whole run (enqueue, the
// ladder's hops and the delivery, and whatever else the broker served in
// those 17 minutes), how many waits ran more than one granularity and
// 100ms late, and the 99th percentile of the delays up to 64s alone. A
// job that runs twice counts once, at its first run; the duplicates are
// reported.
//
//	make bench-lateness                       the quorum ladder
//	go test -run '^$' -bench 'LadderLateness/classic' -benchtime 1x -timeout 40m ./bench/
func BenchmarkLadderLateness(b *testing.B) {
	for _, qt := range []runtime.QueueType{runtime.QueueQuorum, runtime.QueueClassic} {
		b.Run(string(qt), func(b *testing.B) { benchLateness(b, qt) })
	}
}

func benchLateness(b *testing.B, qt runtime.QueueType) {
	requireBroker(b)
	if b.N > 1 {
		b.Fatalf("run with -benchtime 1x: each run takes %ds", latenessLongest)
	}
	ctx, cancel := context.WithTimeout(context.Background(), latenessLongest*time.Second+latenessSlack)
	defer cancel()
	name := uniqueBenchName("lateness-"+string(qt), 0)
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	defer brokertest.DeleteQueues(amqpURL(), name, name+".dead")
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.Delay = runtime.KindOf[latenessJob](), qt, runtime.DelayLadder
	q.Prefetch, q.Concurrency = 200, 100
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}

	var (
		mu     sync.Mutex
		late   = make([]time.Duration, 0, latenessWaits)
		short  []time.Duration // of the delays up to 64s (levels 0 to 5)
		seen   = make(map[int]bool, latenessWaits)
		dups   int
		allRan = make(chan struct{})
	)
	w := runtime.NewWorker(be)
	runtime.Handle(w, q, func(_ context.Context, j latenessJob) error {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if seen[j.N] {
			dups++
			return nil
		}
		seen[j.N] = true
		late = append(late, now.Sub(time.Unix(0, j.Due)))
		if j.Delay <= 64*time.Second {
			short = append(short, late[len(late)-1])
		}
		if len(late) == latenessWaits {
			close(allRan)
		}
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-errc; err != nil {
			b.Error(err)
		}
	}()

	mark := broker.Start()
	// Paced: job n is enqueued no sooner than n/latenessRate seconds after
	// the start, 64 at once at most.
	var g errgroup.Group
	g.SetLimit(64)
	start := time.Now()
	var enqueued atomic.Int64
	for n := range latenessWaits {
		if d := time.Until(start.Add(time.Duration(n) * time.Second / latenessRate)); d > 0 {
			time.Sleep(d) // pacing the producer, not a synchronisation
		}
		// 7919 is prime to latenessLongest: every delay 20 times, scattered.
		delay := time.Duration(1+(n*7919)%latenessLongest) * time.Second
		g.Go(func() error {
			due := time.Now().Add(delay)
			if _, err := runtime.Enqueue(ctx, p, q, latenessJob{N: n, Due: due.UnixNano(), Delay: delay}, runtime.WithDelay(delay)); err != nil {
				return fmt.Errorf("enqueue %d: %w", n, err)
			}
			enqueued.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	enqueueRate := float64(latenessWaits) / time.Since(start).Seconds()
	select {
	case <-allRan:
	case err := <-errc:
		b.Fatalf("worker ended before every wait ran: %v", err)
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		b.Fatalf("%d of %d waits ran within %v of the start", len(late), latenessWaits, time.Since(start))
	}
	span := mark.Stop(latenessWaits)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(late)
	pct := func(p float64) time.Duration { return late[min(len(late)-1, int(p*float64(len(late))))] }
	b.ReportMetric(float64(pct(0.50).Milliseconds()), "p50-late-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-late-ms")
	b.ReportMetric(float64(late[len(late)-1].Milliseconds()), "max-late-ms")
	b.ReportMetric(float64(late[0].Milliseconds()), "min-late-ms")
	slices.Sort(short)
	if len(short) > 0 {
		b.ReportMetric(float64(short[min(len(short)-1, int(0.99*float64(len(short))))].Milliseconds()), "p99-late-ms-upto64s")
	}
	b.ReportMetric(enqueueRate, "enqueued/s")
	b.ReportMetric(span.PerJob(span.ServerCPU), "broker-µs/wait")
	b.ReportMetric(float64(dups), "duplicates")
	// Past the target: one granularity (1s) and 100ms.
	over := len(late) - slices.IndexFunc(late, func(d time.Duration) bool { return d > 1100*time.Millisecond })
	if over > len(late) {
		over = 0
	}
	b.ReportMetric(float64(over), "over-1.1s")
	b.ReportMetric(0, "ns/op")
	if late[0] < -5*time.Millisecond {
		b.Errorf("a wait ran %v before it was due", -late[0])
	}
}
