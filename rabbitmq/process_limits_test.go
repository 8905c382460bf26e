package rabbitmq_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Global limits across worker processes: three processes on one broker,
// each with more handler slots than the limit, and a ledger merged from
// the start and end lines their handlers print with the wall clock they
// share.

// procRun is one job's run as a worker process reported it.
type procRun struct {
	pid        int
	id         string
	start, end time.Time // end is zero until its end line came
}

// procLedger gathers the start and end lines of a queue's jobs from worker
// processes.
type procLedger struct {
	lines chan procLine
	gone  chan int            // the pids of processes whose output ended
	runs  map[string]*procRun // by job id
	twice []string            // ids that started more than once
}

// procLine is one start or end line of a worker process.
type procLine struct {
	pid   int
	start bool
	queue string
	id    string
	at    time.Time
}

func newProcLedger() *procLedger {
	return &procLedger{lines: make(chan procLine, 10000), gone: make(chan int, 100), runs: map[string]*procRun{}}
}

// follow reads c's start and end lines into l until c's output ends.
func (l *procLedger) follow(c *child) {
	go func() {
		defer func() { l.gone <- c.pid() }()
		for line := range c.lines {
			f := strings.Fields(line)
			if len(f) != 4 || (f[0] != "start" && f[0] != "end") {
				continue
			}
			ns, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				continue
			}
			l.lines <- procLine{pid: c.pid(), start: f[0] == "start", queue: f[1], id: f[2], at: time.Unix(0, ns)}
		}
	}()
}

// add records one line.
func (l *procLedger) add(ln procLine) {
	r := l.runs[ln.id]
	switch {
	case ln.start && r != nil:
		l.twice = append(l.twice, ln.id)
	case ln.start:
		l.runs[ln.id] = &procRun{pid: ln.pid, id: ln.id, start: ln.at}
	case r != nil:
		r.end = ln.at
	}
}

// ended is how many runs have ended.
func (l *procLedger) ended() int {
	n := 0
	for _, r := range l.runs {
		if !r.end.IsZero() {
			n++
		}
	}
	return n
}

// untilEnded reads lines until n runs have started and ended, failing t
// after the bound.
func (l *procLedger) untilEnded(t *testing.T, n int, bound time.Duration) {
	t.Helper()
	deadline := time.After(bound)
	for l.ended() < n {
		select {
		case ln := <-l.lines:
			l.add(ln)
		case pid := <-l.gone:
			t.Fatalf("worker process %d ended after %d of %d jobs ran", pid, l.ended(), n)
		case <-deadline:
			t.Fatalf("after %v, %d of %d jobs have run (%d started)", bound, l.ended(), n, len(l.runs))
		}
	}
}

// untilStarted reads lines until n runs have started, failing t after
// the bound.
func (l *procLedger) untilStarted(t *testing.T, n int, bound time.Duration) {
	t.Helper()
	deadline := time.After(bound)
	for len(l.runs) < n {
		select {
		case ln := <-l.lines:
			l.add(ln)
		case pid := <-l.gone:
			t.Fatalf("worker process %d ended after %d of %d jobs started", pid, len(l.runs), n)
		case <-deadline:
			t.Fatalf("after %v, %d of %d jobs have started", bound, len(l.runs), n)
		}
	}
}

// sorted returns the runs in the order they started.
func (l *procLedger) sorted() []*procRun {
	rs := make([]*procRun, 0, len(l.runs))
	for _, r := range l.runs {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b *procRun) int { return a.start.Compare(b.start) })
	return rs
}

// mostAtOnce is the most runs of rs running at one moment, and that
// moment. An end and a start at the same nanosecond do not overlap.
func mostAtOnce(rs []*procRun) (int, time.Time) {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, r := range rs {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // ends first
	})
	most, now := 0, 0
	var at time.Time
	for _, e := range edges {
		now += e.d
		if now > most {
			most, at = now, e.at
		}
	}
	return most, at
}

// checkEveryJobOnce fails t unless every id enqueued ran once, and
// nothing else ran.
func checkEveryJobOnce(t *testing.T, l *procLedger, ids []string) {
	t.Helper()
	if len(l.twice) > 0 {
		t.Errorf("%d jobs started more than once, want none (first: %s)", len(l.twice), l.twice[0])
	}
	for _, id := range ids {
		if l.runs[id] == nil {
			t.Errorf("job %s never ran", id)
		}
	}
	if len(l.runs) != len(ids) {
		t.Errorf("%d jobs ran, want the %d enqueued", len(l.runs), len(ids))
	}
}

// deleteLimitQueues deletes, when t ends, the broker queues that hold
// q's global limits, with the leases of the given limit key values.
func deleteLimitQueues(t *testing.T, q runtime.QueueConfig, keys ...string) {
	t.Helper()
	t.Cleanup(func() {
		_, _, _, _, names := rabbitmq.LimitQueues(q.Name)
		for _, k := range keys {
			names = append(names, rabbitmq.KeyLeaseQueue(q.Name, k))
		}
		brokertest.DeleteQueues(amqpURL(), names...)
	})
}

// procQueue returns a queue of tick named for t with 20 handler slots
// and prefetch 20 per worker, shaped by set, its limits' queues deleted
// when t ends, and a producer onto it.
func procQueue(t *testing.T, set func(*runtime.QueueConfig), keys ...string) (runtime.QueueConfig, *runtime.Producer) {
	t.Helper()
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.Prefetch, q.Concurrency = runtime.KindOf[tick](), 20, 20
	set(&q)
	deleteLimitQueues(t, q, keys...)
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	return q, p
}

// startProcs starts n worker processes of q, their lines followed by a
// new procLedger.
func startProcs(t *testing.T, n int, cfg childConfig) ([]*child, *procLedger) {
	t.Helper()
	l := newProcLedger()
	var cs []*child
	for range n {
		c := startChild(t, cfg)
		l.follow(c)
		cs = append(cs, c)
	}
	return cs, l
}

// enqueueTicks enqueues jobs, returning their ids.
func enqueueTicks(t *testing.T, p *runtime.Producer, q runtime.QueueConfig, jobs []tick) []string {
	t.Helper()
	ids, err := runtime.EnqueueMany(ctxT(t), p, q, jobs)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestLimitAcrossProcesses: limit=10 on a queue that three worker
// processes handle with 20 handler slots each: the merged ledger of their
// runs never shows more than 10 running at once, and shows 10 at once at
// some point; every job runs once. The throughput is logged beside the
// limit's ceiling (10 ÷ the job's 100ms); the benchmark
// BenchmarkLimitAcrossWorkers reports it.
func TestLimitAcrossProcesses(t *testing.T) {
	const (
		limit = 10
		jobs  = 300
		work  = 100 * time.Millisecond
	)
	q, p := procQueue(t, func(q *runtime.QueueConfig) { q.Limit = limit })
	cs, l := startProcs(t, 3, childConfig{Handle: []runtime.QueueConfig{q}, Work: work})
	ids := enqueueTicks(t, p, q, make([]tick, jobs))
	l.untilEnded(t, jobs, wait)
	for _, c := range cs {
		c.stop(t)
	}
	checkEveryJobOnce(t, l, ids)

	rs := l.sorted()
	most, at := mostAtOnce(rs)
	if most > limit {
		t.Errorf("%d jobs ran at once at %v, want at most the limit, %d", most, at.Format(time.RFC3339Nano), limit)
	}
	if most < limit {
		t.Errorf("at most %d jobs ran at once, want the limit, %d, at some point", most, limit)
	}
	pids := map[int]int{}
	for _, r := range rs {
		pids[r.pid]++
	}
	if len(pids) != 3 {
		t.Errorf("jobs ran in %d processes, want all 3: %v", len(pids), pids)
	}
	var last time.Time
	for _, r := range rs {
		if r.end.After(last) {
			last = r.end
		}
	}
	span := last.Sub(rs[0].start)
	rate := float64(jobs) / span.Seconds()
	ceiling := float64(limit) / work.Seconds()
	t.Logf("%d jobs of %v under limit=%d in 3 processes: %v from the first start to the last end, %.1f jobs/s, %.2f of the limit's ceiling of %.0f jobs/s; most at once %d; per process %v",
		jobs, work, limit, span.Round(time.Millisecond), rate, rate/ceiling, ceiling, most, pids)
}

// TestRateAcrossProcesses: rate=50/s on a queue that three worker
// processes handle, 300 jobs: every job runs once, and the ledger of
// their starts keeps to the rate as far as the workers' clocks can tell.
//
// A job's token is spent as its run begins, after the start line's
// stamp is due (the worker calls the handler and spends in the
// background), so a token comes back no sooner than a second after the
// start it allowed, by the workers' clock too: no second of start lines
// holds more than 50, and 51 allows for the one case where the spend
// reaches the broker before the handler stamps its line. After the run
// there are 50 tokens, as the ledger says. The sustained rate after the
// first second's 50 is logged.
func TestRateAcrossProcesses(t *testing.T) {
	const (
		n    = 50
		jobs = 300
	)
	q, p := procQueue(t, func(q *runtime.QueueConfig) { q.Rate = runtime.Rate{N: n, Per: time.Second} })
	cs, l := startProcs(t, 3, childConfig{Handle: []runtime.QueueConfig{q}, Work: 5 * time.Millisecond})
	ids := enqueueTicks(t, p, q, make([]tick, jobs))
	l.untilEnded(t, jobs, wait)
	for _, c := range cs {
		c.stop(t)
	}
	checkEveryJobOnce(t, l, ids)

	rs := l.sorted()
	most, from := mostInWindow(rs, time.Second)
	if most > n+1 {
		t.Errorf("%d jobs started in the second from %v, want at most %d (+1) (rate %d/s)", most, from.Format(time.RFC3339Nano), n, n)
	}
	ch := rawChannel(t)
	_, _, tokens, ledger, _ := rabbitmq.LimitQueues(q.Name)
	if got := ledgerBody(t, ch, ledger); got != strconv.Itoa(n) {
		t.Errorf("ledger says %q tokens, want %d", got, n)
	}
	// A token may be between the return queue and the token queue, being
	// dead-lettered, for a moment.
	deadline := time.Now().Add(wait)
	poll := time.NewTicker(20 * time.Millisecond)
	defer poll.Stop()
	for held := 0; held != n; {
		held = queueLen(t, ch, tokens) + queueLen(t, ch, brokertest.LimitQueuesOf(q.Name).RateReturn)
		switch {
		case held > n:
			t.Fatalf("%d tokens after the run, want %d", held, n)
		case held < n && time.Now().After(deadline):
			t.Fatalf("%d tokens %v after the run, want %d", held, wait, n)
		case held < n:
			<-poll.C
		}
	}
	span := rs[len(rs)-1].start.Sub(rs[0].start)
	t.Logf("%d starts under rate=%d/s in 3 processes over %v: at most %d in any second of start lines; %.1f starts/s after the first second's %d (%.2f of the rate), %.1f/s over all",
		jobs, n, span.Round(time.Millisecond), most, float64(jobs-n)/span.Seconds(), n, float64(jobs-n)/span.Seconds()/n, float64(jobs)/span.Seconds())
}

// mostInWindow is the most of rs's starts (sorted) in any window of
// length w, and the window's first start.
func mostInWindow(rs []*procRun, w time.Duration) (int, time.Time) {
	most, j := 0, 0
	var from time.Time
	for i := range rs {
		for j < len(rs) && rs[j].start.Sub(rs[i].start) < w {
			j++
		}
		if j-i > most {
			most, from = j-i, rs[i].start
		}
	}
	return most, from
}

// TestLimitKeyAcrossProcesses: limit_key over 100 key values on a queue
// that three worker processes handle, three jobs per key: no two jobs of
// one key run at once anywhere, jobs of different keys do, and every job
// runs once.
func TestLimitKeyAcrossProcesses(t *testing.T) {
	const (
		keys    = 100
		perKey  = 3
		work    = 50 * time.Millisecond
		allJobs = keys * perKey
	)
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("k%d", k)
	}
	q, p := procQueue(t, func(q *runtime.QueueConfig) { q.LimitKey = "Key" }, names...)
	cs, l := startProcs(t, 3, childConfig{Handle: []runtime.QueueConfig{q}, Work: work})
	jobs := make([]tick, allJobs)
	for i := range jobs {
		jobs[i].Key = names[i%keys]
	}
	ids := enqueueTicks(t, p, q, jobs)
	l.untilEnded(t, allJobs, wait)
	for _, c := range cs {
		c.stop(t)
	}
	checkEveryJobOnce(t, l, ids)

	byKey := map[string][]*procRun{}
	for i, id := range ids {
		if r := l.runs[id]; r != nil {
			byKey[jobs[i].Key] = append(byKey[jobs[i].Key], r)
		}
	}
	for k, rs := range byKey {
		slices.SortFunc(rs, func(a, b *procRun) int { return a.start.Compare(b.start) })
		if most, at := mostAtOnce(rs); most > 1 {
			t.Errorf("key %s: %d jobs ran at once at %v, want one at a time", k, most, at.Format(time.RFC3339Nano))
		}
	}
	most, _ := mostAtOnce(l.sorted())
	if most < 2 {
		t.Errorf("at most %d jobs ran at once, want jobs of different keys at once", most)
	}
	rs := l.sorted()
	var last time.Time
	for _, r := range rs {
		if r.end.After(last) {
			last = r.end
		}
	}
	t.Logf("%d jobs of %v over %d keys in 3 processes: %v from the first start to the last end, most at once %d",
		allJobs, work, keys, last.Sub(rs[0].start).Round(time.Millisecond), most)
}

// TestLimitTokensBackAfterKill: a worker process holding all 5 tokens of
// limit=5 (its jobs block until it ends) is killed with SIGKILL: the
// token queue holds 5 ready tokens again, as the broker requeues what the
// dead connection held, and never more than 5; the ledger still says 5.
// The time from the kill until all 5 are back is logged (polled every
// 20ms).
func TestLimitTokensBackAfterKill(t *testing.T) {
	for _, typ := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(typ), func(t *testing.T) {
			const (
				limit = 5
				bound = 15 * time.Second
			)
			q, p := procQueue(t, func(q *runtime.QueueConfig) {
				q.Limit, q.QueueType = limit, typ
				if typ == runtime.QueueQuorum {
					q.MaxPriority = runtime.NoPriority
				}
			})
			tokens, ledger, _, _, _ := rabbitmq.LimitQueues(q.Name)
			c, l := startProcs(t, 1, childConfig{Handle: []runtime.QueueConfig{q}, Block: true})
			enqueueTicks(t, p, q, make([]tick, limit+3))
			l.untilStarted(t, limit, wait)

			ch := rawChannel(t)
			if n := queueLen(t, ch, tokens); n != 0 {
				t.Fatalf("%d tokens ready while the worker runs %d jobs, want 0", n, limit)
			}
			killed := time.Now()
			_ = c[0].cmd.Process.Signal(syscall.SIGKILL)
			poll := time.NewTicker(20 * time.Millisecond)
			defer poll.Stop()
			var back time.Duration
			most := 0
			for back == 0 {
				n := queueLen(t, ch, tokens)
				most = max(most, n)
				switch since := time.Since(killed); {
				case n >= limit:
					back = since
				case since > bound:
					t.Fatalf("%v after the kill %d of %d tokens are back, want all", bound, n, limit)
				default:
					<-poll.C
				}
			}
			within(t, c[0].done, "the killed worker process to end")
			if most > limit {
				t.Errorf("%d tokens ready after the kill, want at most %d", most, limit)
			}
			if n := queueLen(t, ch, tokens); n != limit {
				t.Errorf("%d tokens ready once they came back, want %d", n, limit)
			}
			if got := ledgerBody(t, ch, ledger); got != strconv.Itoa(limit) {
				t.Errorf("ledger says %q tokens, want %d", got, limit)
			}
			t.Logf("%s: all %d tokens back %v after SIGKILL (polled every 20ms)", typ, limit, back.Round(time.Millisecond))
		})
	}
}

// ledgerBody reads the body of a limit's one ledger message, in queue
// name, and puts it back.
func ledgerBody(t *testing.T, ch *amqp.Channel, name string) string {
	t.Helper()
	if n := queueLen(t, ch, name); n != 1 {
		t.Fatalf("ledger %q holds %d messages, want 1", name, n)
	}
	m, ok, err := ch.Get(name, false)
	if err != nil || !ok {
		t.Fatalf("read ledger %q: %v (got a message: %v)", name, err, ok)
	}
	if err := m.Nack(false, true); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(m.Body))
}
