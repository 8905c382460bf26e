// Package bench measures queuey on a local RabbitMQ against the plain
// amqp091-go loop a user would write by hand with the same guarantees
// (package e2e says what each side does), end to end: 20,000 jobs of a
// 200-byte payload, prefetch 50, medians of 5 alternating rounds (-rounds).
//
//	go test -run '^$' -bench . ./bench/
//
// Each benchmark logs a line with both rates and their ratio
// (queuey/plain), and reports per job: client CPU (this process: the
// producers, the consumer and the handlers), broker CPU (the process
// listening on the broker's port, which also serves anything else using
// the broker meanwhile) and allocations. -side=queuey or -side=plain runs
// one side only, to profile it; -wire counts each side's AMQP frames:
//
//	go test -run '^$' -bench Sync -cpuprofile cpu.out ./bench/ -args -side=queuey
//	go test -run '^$' -bench . ./bench/ -args -wire
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

const (
	jobs      = 20000
	prefetch  = 50
	benchWait = 5 * time.Minute
)

// broker is the Meter of every run here.
var broker = e2e.BrokerMeter(brokertest.URL())

func amqpURL() string { return brokertest.URL() }

func requireBroker(b *testing.B) { b.Helper(); brokertest.Require(b) }

// dialBroker connects to the broker with opts, logging nowhere; b fails
// when it cannot. The caller closes the backend.
func dialBroker(b *testing.B, ctx context.Context, opts rabbitmq.Options) *rabbitmq.Backend {
	b.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.ManagementURL == "" {
		opts.ManagementURL = brokertest.ManagementURL()
	}
	be, err := rabbitmq.Dial(ctx, amqpURL(), opts)
	if err != nil {
		b.Fatal(err)
	}
	return be
}

// reportRate runs run once an iteration, on a fresh name made of what,
// and reports n over the time run says it took, as unit.
func reportRate(b *testing.B, what string, n int, unit string, run func(b *testing.B, name string) time.Duration) {
	requireBroker(b)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		total += run(b, uniqueBenchName(what, i))
	}
	b.ReportMetric(float64(b.N*n)/total.Seconds(), unit)
	b.ReportMetric(0, "ns/op")
}

func uniqueBenchName(what string, i int) string {
	return fmt.Sprintf("queuey-bench.%s.%d.%d", what, time.Now().UnixNano(), i)
}

var (
	rounds = flag.Int("rounds", 5, "runs of each side per benchmark iteration, alternating; figures are their medians")
	side   = flag.String("side", "", "run one side of each comparison only, queuey or plain, to profile it")
	wire   = flag.Bool("wire", false, "run each side through an AMQP frame counter and log its traffic per job")
)

// levels are the max_priority values each comparison runs queuey at: 0,
// no priorities, the same queue as the plain loop's (a deferred job then
// returns behind the backlog); 1, the fewest levels with which a deferred
// job still returns ahead of it; and 10, the annotation's default. The
// plain loop's queue has no priorities.
var levels = []int{0, 1, 10}

// BenchmarkSync: 64 goroutines each calling Enqueue and waiting for its
// confirm, against the plain loop keeping 64 confirms in flight.
func BenchmarkSync(b *testing.B) {
	compareLevels(b, "sync", 64, func(q *e2e.Queuey) { q.Producers = 64 })
}

// BenchmarkBatch: EnqueueMany of 1,000 jobs per call from one goroutine,
// against the plain loop keeping up to 1,024 confirms in flight.
func BenchmarkBatch(b *testing.B) {
	compareLevels(b, "batch", 1024, func(q *e2e.Queuey) { q.Batch = 1000 })
}

// compareLevels runs compare once for each of levels: the plain loop
// keeping window confirms in flight, on a queue without priorities and on
// one with the level's, against queuey as shape sets it up.
func compareLevels(b *testing.B, name string, window int, shape func(*e2e.Queuey)) {
	requireBroker(b)
	for _, level := range levels {
		b.Run(fmt.Sprintf("max_priority=%d", level), func(b *testing.B) {
			like := func(name string) e2e.Plain {
				p := plain(name, window)
				p.MaxPriority = level
				return p
			}
			if level == 0 {
				like = nil // the plain loop's own queue
			}
			compare(b, fmt.Sprintf("%s, max_priority=%d", name, level),
				func(name string) e2e.Plain { return plain(name, window) }, like,
				func(name string) e2e.Queuey {
					q := queuey(name, level)
					shape(&q)
					return q
				})
		})
	}
}

// BenchmarkPlainShape runs the plain loop (window 64) with what queuey's
// queue and envelope add, one at a time: x-max-priority=10 (queuey's
// default) and queuey's header table. What each costs the broker is what
// queuey pays for it before any client code runs.
func BenchmarkPlainShape(b *testing.B) {
	requireBroker(b)
	for _, c := range []struct {
		name        string
		maxPriority int
		headers     bool
	}{
		{"plain", 0, false},
		{"max_priority=1", 1, false},
		{"max_priority=10", 10, false},
		{"headers", 0, true},
		{"max_priority=10+headers", 10, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var spans []e2e.Span
			for b.Loop() {
				for i := range *rounds {
					p := plain(uniqueBenchName("shape", i), 64)
					p.MaxPriority, p.Headers = c.maxPriority, c.headers
					spans = append(spans, run(b, "plain", p.Run))
				}
			}
			report(b, "", spans)
			b.ReportMetric(0, "ns/op")
		})
	}
}

func plain(name string, window int) e2e.Plain {
	return e2e.Plain{URL: amqpURL(), Queue: name, Jobs: jobs, Window: window, Prefetch: prefetch, Meter: broker}
}

// queuey is a run on queue name at annotation level max_priority=level.
func queuey(name string, level int) e2e.Queuey {
	return e2e.Queuey{URL: amqpURL(), Queue: name, Jobs: jobs, Prefetch: prefetch, MaxPriority: configPriority(level), Meter: broker}
}

// configPriority is the QueueConfig.MaxPriority of annotation level
// max_priority=level: runtime.NoPriority for 0, which a QueueConfig's zero
// would make runtime.DefaultMaxPriority.
func configPriority(level int) int {
	if level == 0 {
		return runtime.NoPriority
	}
	return level
}

// compare runs the plain loop and queuey alternately, -rounds times each
// per iteration, and reports both sides and the ratio of their median
// rates. When like is not nil it also runs the plain loop on a queue with
// queuey's queue arguments (x-max-priority) in each round, and reports
// that ratio too: what queuey's own code costs, apart from what its queue
// costs the broker.
func compare(b *testing.B, shape string, p, like func(string) e2e.Plain, q func(string) e2e.Queuey) {
	var plains, likes, ours []e2e.Span
	runPlain := func(spans *[]e2e.Span, mk func(string) e2e.Plain, what string, i int) {
		c := mk(uniqueBenchName(what, i))
		url, logWire := tapped(b, shape+" "+what)
		c.URL = url
		*spans = append(*spans, logWire(run(b, what, c.Run)))
	}
	for b.Loop() {
		for i := range *rounds {
			if *side != "queuey" {
				runPlain(&plains, p, "plain", i)
				if like != nil {
					runPlain(&likes, like, "plain-like", i)
				}
			}
			if *side != "plain" {
				c := q(uniqueBenchName("queuey", i))
				url, logWire := tapped(b, shape+" queuey")
				c.URL = url
				ours = append(ours, logWire(run(b, "queuey", c.Run)))
			}
		}
	}
	if *side != "" {
		report(b, *side+"-", slices.Concat(plains, ours))
		if len(likes) > 0 {
			report(b, "plain-like-", likes)
		}
		b.ReportMetric(0, "ns/op")
		return
	}
	pr, qr := report(b, "plain-", plains), report(b, "queuey-", ours)
	b.ReportMetric(qr/pr, "ratio")
	b.ReportMetric(0, "ns/op") // each op is several runs of 20,000 jobs; the rates say it
	same := ""
	if like != nil {
		lr := report(b, "plain-like-", likes)
		b.ReportMetric(qr/lr, "ratio-like")
		same = fmt.Sprintf("; plain on a queue like queuey's %.0f jobs/s, ratio %.2f", lr, qr/lr)
	}
	b.Logf("%s: queuey %.0f jobs/s, plain amqp091-go %.0f jobs/s, ratio (queuey/plain) %.2f%s, medians of %d",
		shape, qr, pr, qr/pr, same, len(ours))
}

// tapped returns the broker URL to run on and a function that logs what
// crossed the wire during the run, per job, when -wire is set.
func tapped(b *testing.B, what string) (string, func(e2e.Span) e2e.Span) {
	if !*wire {
		return amqpURL(), func(s e2e.Span) e2e.Span { return s }
	}
	tap, err := e2e.NewTap(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	return tap.URL(amqpURL()), func(s e2e.Span) e2e.Span {
		w := tap.Counts()
		_ = tap.Close()
		b.Logf("%s, to the broker: %s", what, w[e2e.ToBroker].PerJob(s.Jobs))
		b.Logf("%s, from the broker: %s", what, w[e2e.FromBroker].PerJob(s.Jobs))
		return s
	}
}

// run runs f with the pprof label side=side on every goroutine it starts,
// so that one -cpuprofile of a comparison splits into its sides
// (go tool pprof -tagfocus side=queuey), measured in the same minutes.
func run(b *testing.B, side string, f func(context.Context) (e2e.Span, error)) e2e.Span {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	var (
		s   e2e.Span
		err error
	)
	pprof.Do(ctx, pprof.Labels("side", side), func(ctx context.Context) { s, err = f(ctx) })
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// report reports the medians of spans under prefix and returns the
// median rate.
func report(b *testing.B, prefix string, spans []e2e.Span) float64 {
	med := func(f func(e2e.Span) float64) float64 {
		v := make([]float64, len(spans))
		for i, s := range spans {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rate := med(e2e.Span.Rate)
	b.ReportMetric(rate, prefix+"jobs/s")
	b.ReportMetric(med(func(s e2e.Span) float64 { return s.PerJob(s.ClientCPU) }), prefix+"client-µs/job")
	b.ReportMetric(med(func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) }), prefix+"broker-µs/job")
	b.ReportMetric(med(func(s e2e.Span) float64 { return float64(s.Mallocs) / float64(s.Jobs) }), prefix+"allocs/job")
	b.ReportMetric(med(func(s e2e.Span) float64 { return float64(s.Syscalls) / float64(s.Jobs) }), prefix+"syscalls/job")
	b.ReportMetric(med(func(s e2e.Span) float64 { return float64(s.Goroutines) / float64(s.Jobs) }), prefix+"goroutines/job")
	return rate
}
