package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// waitMode is one way of holding waits: a queue type and a delay mode.
type waitMode struct {
	name  string
	qt    runtime.QueueType
	delay runtime.DelayMode
}

// waitModes are the modes the wait rows compare. delay=plugin is left
// out: it needs the broker's delayed-message plugin, which the benchmark
// broker does not run.
var waitModes = []waitMode{
	{"queue-classic", runtime.QueueClassic, runtime.DelayQueue},
	{"rungs-quorum", runtime.QueueQuorum, runtime.DelayQueue},
	{"ladder-classic", runtime.QueueClassic, runtime.DelayLadder},
	{"ladder-quorum", runtime.QueueQuorum, runtime.DelayLadder},
}

// waitGranularity is the granularity of the wait rows: whole seconds are
// whole granularities, and its ladders (queuey.ladder.<type>.500ms) are
// the rows' own, deleted after each row, so that no wait of theirs is
// left on a ladder that other programs on the broker use.
const waitGranularity = 500 * time.Millisecond

// distinctWaits is how many waits of distinct delays the waits rows
// enqueue: 1,000 by default. At 10,000 (-distinct-waits=10000) the
// queue-classic row makes 10,000 hold queues, which take the broker
// minutes to declare and delete on a loaded 2-core machine, and the
// management API's list of queues, which the rows count with, takes
// longer than its 30s bound.
var distinctWaits = flag.Int("distinct-waits", 1000, "waits of distinct delays in BenchmarkScaleWaits' waits rows")

// BenchmarkScaleWaits compares the delay modes at scale, a row each per
// mode (make bench-scale runs them with BenchmarkScale and
// BenchmarkScaleFloor):
//
//   - defer/distinct/<mode>: as BenchmarkScale's defer/distinct, 1,000
//     jobs each deferring once with a delay of its own (1s ... 1,000s):
//     deferrals settled per second, from the worker's start to the last
//     deferral confirmed, and the broker's CPU per deferral
//     (broker-µs/wait: the broker's process over the same span, with
//     whatever else it served meanwhile) and this process's
//     (client-µs/wait: the worker, the client library and the garbage
//     collector). The span starts with the worker's start (its declares,
//     its consumer's registration), which on a loaded 2-core machine took
//     40 to 190ms of a row's 250 to 700ms: first-ms is the time to the
//     first deferral settled, and after-first/s the rate of the others
//     after it, the deferrals' own pace.
//   - defer/shared/<mode>: the same with one delay (1,000s) for every job.
//   - waits/1000/<mode>: 1,000 delayed enqueues (-distinct-waits), 64 at
//     once, each with a delay of its own (1s, 2s, ...), nothing consuming: waits per
//     second, broker CPU per wait, and the broker's queues of the row
//     (its queue, dead-letter queue, hold queues or rungs, and its ladder)
//     before the first wait and after the last (queues-before,
//     queues-after).
//
// A mode is queue-classic (delay=queue, a hold queue per delay),
// rungs-quorum (delay=queue on quorum queues: delays rounded up onto a
// few rungs), ladder-classic or ladder-quorum (delay=ladder). The
// granularity is 500ms, so that each row's ladder is its own; whole
// seconds are whole granularities in every mode. Every queue and
// exchange of a row is deleted afterwards, outside the clock.
func BenchmarkScaleWaits(b *testing.B) {
	for _, m := range waitModes {
		b.Run("defer/distinct/"+m.name, func(b *testing.B) {
			benchModeDefers(b, m, func(n int) time.Duration { return time.Duration(n+1) * time.Second })
		})
	}
	for _, m := range waitModes {
		b.Run("defer/shared/"+m.name, func(b *testing.B) {
			benchModeDefers(b, m, func(int) time.Duration { return scaleDefers * time.Second })
		})
	}
	for _, m := range waitModes {
		b.Run(fmt.Sprintf("waits/%d/%s", *distinctWaits, m.name), func(b *testing.B) { benchDistinctWaits(b, m) })
	}
}

// modeQueue returns the config of a queue of mode m named name, of
// scaleJob.
func modeQueue(name string, m waitMode) runtime.QueueConfig {
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.Delay = runtime.KindOf[scaleJob](), m.qt, m.delay
	q.Prefetch, q.Concurrency = 100, 100
	return q
}

func benchModeDefers(b *testing.B, m waitMode, delayOf func(n int) time.Duration) {
	requireBroker(b)
	var total, first time.Duration
	var brokerCPU, clientCPU float64
	for i := 0; b.Loop(); i++ {
		name := uniqueBenchName("scale-waits-defer", i)
		elapsed, toFirst, span := modeDefersOnce(b, name, m, delayOf)
		total += elapsed
		first += toFirst
		brokerCPU += span.PerJob(span.ServerCPU)
		clientCPU += span.PerJob(span.ClientCPU)
	}
	b.ReportMetric(float64(b.N*scaleDefers)/total.Seconds(), "deferrals/s")
	b.ReportMetric(first.Seconds()*1000/float64(b.N), "first-ms")
	b.ReportMetric(float64(b.N*(scaleDefers-1))/(total-first).Seconds(), "after-first/s")
	b.ReportMetric(brokerCPU/float64(b.N), "broker-µs/wait")
	b.ReportMetric(clientCPU/float64(b.N), "client-µs/wait")
	b.ReportMetric(0, "ns/op")
}

func modeDefersOnce(b *testing.B, name string, m waitMode, delayOf func(n int) time.Duration) (elapsed, first time.Duration, _ e2e.Span) {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{Granularity: waitGranularity})
	defer be.Close()
	defer deleteRow(b, name, m)
	q := modeQueue(name, m)
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
	mark := broker.Start()
	start := time.Now()
	go func() { errc <- w.Run(runCtx) }()
	select {
	case <-c.done:
	case err := <-errc:
		b.Fatalf("worker ended before its deferrals: %v", err)
	case <-ctx.Done():
		b.Fatalf("%d of %d deferrals settled within %v", c.n.Load(), scaleDefers, benchWait)
	}
	elapsed = time.Since(start)
	span := mark.Stop(scaleDefers)
	first = time.Unix(0, c.first.Load()).Sub(start)
	stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return elapsed, first, span
}

func benchDistinctWaits(b *testing.B, m waitMode) {
	requireBroker(b)
	var total time.Duration
	var brokerCPU, before, after float64
	for i := 0; b.Loop(); i++ {
		name := uniqueBenchName("scale-waits-distinct", i)
		r := distinctWaitsOnce(b, name, m)
		total += r.elapsed
		brokerCPU += r.span.PerJob(r.span.ServerCPU)
		before += float64(r.before)
		after += float64(r.after)
	}
	b.ReportMetric(float64(b.N*(*distinctWaits))/total.Seconds(), "waits/s")
	b.ReportMetric(brokerCPU/float64(b.N), "broker-µs/wait")
	b.ReportMetric(before/float64(b.N), "queues-before")
	b.ReportMetric(after/float64(b.N), "queues-after")
	b.ReportMetric(0, "ns/op")
}

type distinctResult struct {
	elapsed       time.Duration
	span          e2e.Span
	before, after int
}

func distinctWaitsOnce(b *testing.B, name string, m waitMode) distinctResult {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{Granularity: waitGranularity})
	defer be.Close()
	defer deleteRow(b, name, m)
	q := modeQueue(name, m)
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	var r distinctResult
	r.before = len(rowQueues(b, name, m))
	var i atomic.Int64
	mark := broker.Start()
	start := time.Now()
	err = e2e.Concurrently(*distinctWaits, 64, func() error {
		n := int(i.Add(1))
		_, err := runtime.Enqueue(ctx, p, q, scaleJob{N: n}, runtime.WithDelay(time.Duration(n)*time.Second))
		return err
	})
	r.elapsed = time.Since(start)
	r.span = mark.Stop(*distinctWaits)
	if err != nil {
		b.Fatal(err)
	}
	r.after = len(rowQueues(b, name, m))
	return r
}

// ladderPrefix is the start of the names of the ladder of mode m at
// granularity g, with its trailing dot; "" when m holds no ladder.
func ladderPrefix(m waitMode, g time.Duration) string {
	if m.delay != runtime.DelayLadder {
		return ""
	}
	return fmt.Sprintf("queuey.ladder.%s.%dms.", m.qt, g.Milliseconds())
}

// rowQueues lists, through the management API, the broker's queues of
// the row of queue name in mode m: name and every queue named after it,
// and the row's ladder.
func rowQueues(b *testing.B, name string, m waitMode) []string {
	return rowQueuesAt(b, name, m, waitGranularity)
}

// rowQueuesAt is rowQueues of a row whose ladder's granularity is g.
func rowQueuesAt(b *testing.B, name string, m waitMode, g time.Duration) []string {
	b.Helper()
	body, err := managementAPI{base: brokertest.ManagementURL()}.do(http.MethodGet, "api/queues/%2F?columns=name", nil)
	if err != nil {
		b.Fatalf("list queues: %v", err)
	}
	var all []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(body, &all); err != nil {
		b.Fatalf("list queues: %v", err)
	}
	lp := ladderPrefix(m, g)
	var names []string
	for _, q := range all {
		if q.Name == name || strings.HasPrefix(q.Name, name+".") || (lp != "" && strings.HasPrefix(q.Name, lp)) {
			names = append(names, q.Name)
		}
	}
	return names
}

// deleteRow deletes the queues of the row of queue name in mode m, and
// its ladder's exchanges: what the row made, and nothing else.
func deleteRow(b *testing.B, name string, m waitMode) { deleteRowAt(b, name, m, waitGranularity) }

// deleteRowAt is deleteRow of a row whose ladder's granularity is g.
func deleteRowAt(b *testing.B, name string, m waitMode, g time.Duration) {
	brokertest.DeleteQueues(amqpURL(), rowQueuesAt(b, name, m, g)...)
	lp := ladderPrefix(m, g)
	if lp == "" {
		return
	}
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		return
	}
	defer conn.Close()
	exchanges := []string{lp + "deliver", lp + "unrouted", lp + "enter"}
	for level := range waits.Levels(g) {
		exchanges = append(exchanges, fmt.Sprintf("%s%02d", lp, level))
	}
	for _, x := range exchanges {
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(x, false, false)
			_ = ch.Close()
		}
	}
}
