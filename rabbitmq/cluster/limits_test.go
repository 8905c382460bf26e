package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// The limits under the kill: a Limit of killLimit on one quorum queue, a
// Rate of killRate a second on another, and their jobs.
const (
	killLimit     = 7
	killRate      = 5
	killLimitJobs = 400
	killRateJobs  = 80
	killLimitWork = 200 * time.Millisecond
)

// TestLimitTokensSurviveLeaderKill mints the tokens of a quorum queue's
// Limit of 7 and of another's Rate of 5/s through node 1, so that node 1
// leads their token and ledger queues, runs both queues' jobs with
// workers on the two other nodes (each with the others as failover), and
// kills the node that leads the token queues while jobs hold tokens. The
// workers' connections stay up, so never more than 7 of the limited
// queue's jobs run at once, before the kill or after; once the node is
// back and has rejoined, every job has run, the token queues hold exactly
// 7 and 5 tokens, and the ledgers say 7 and 5: the kill lost none and
// minted none.
func TestLimitTokensSurviveLeaderKill(t *testing.T) {
	clustertest.Require(t)
	lq, rq := limitedQueue(t, "limit"), limitedQueue(t, "rate")
	lq.Limit = killLimit
	rq.Rate = runtime.Rate{N: killRate, Per: time.Second}
	lnames, rnames := brokertest.LimitQueuesOf(lq.Name), brokertest.LimitQueuesOf(rq.Name)
	ctx := ctxT(t, 10*wait)

	// Node 1 mints: the broker places a quorum queue's leader on the node
	// whose client declares it.
	minter := clustertest.Dial(t, 1, rabbitmq.Options{})
	for _, q := range []runtime.QueueConfig{lq, rq} {
		p, err := minter.AcquirePermit(ctx, q, "")
		if err != nil {
			t.Fatalf("first permit of %q through node 1: %v", q.Name, err)
		}
		p.Release()
	}
	if err := minter.Close(); err != nil {
		t.Fatal(err)
	}
	victim := clustertest.Leader(t, 2, lnames.LimitTokens)
	leaders := map[string]int{}
	for _, name := range []string{lnames.LimitTokens, lnames.LimitLedger, rnames.RateTokens, rnames.RateLedger} {
		leaders[name] = clustertest.Leader(t, 2, name)
	}
	t.Logf("leaders before the kill: %v", leaders)
	var workerNodes []int
	for n := 1; n <= clustertest.Nodes; n++ {
		if n != victim {
			workerNodes = append(workerNodes, n)
		}
	}

	// The jobs, enqueued through a node that stays up.
	p, err := runtime.NewProducer(ctx, clustertest.Dial(t, workerNodes[0], rabbitmq.Options{}), lq, rq)
	if err != nil {
		t.Fatal(err)
	}
	ledger := clustertest.NewLedger()
	for _, q := range []runtime.QueueConfig{lq, rq} {
		n := killLimitJobs
		if q.Name == rq.Name {
			n = killRateJobs
		}
		ids, err := runtime.EnqueueMany(ctx, p, q, make([]job, n))
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			ledger.Confirmed(id)
		}
	}

	var limited, rated brokertest.Runs
	var workers []string
	var stops []func()
	start := func(name string, n int) {
		workers = append(workers, name)
		b := clustertest.Dial(t, n, rabbitmq.Options{Nodes: clustertest.URLsAfter(n)})
		w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
		runtime.Handle(w, lq, limitedWork(&limited, ledger, name, killLimitWork))
		runtime.Handle(w, rq, limitedWork(&rated, ledger, name, 0))
		stop := brokertest.Run(t, w)
		stops = append(stops, func() { stop(); _ = b.Close() })
	}
	for _, n := range workerNodes {
		start(fmt.Sprintf("node %d", n), n)
	}
	eventually.True(t, wait, func() bool {
		return limited.Stats().Running == killLimit && limited.WorkersAfter(time.Time{}, workers...) && rated.WorkersAfter(time.Time{}, workers...)
	}, "7 jobs of the limited queue hold tokens, and both workers run jobs of both queues")

	held := limited.Stats().Running
	killed := clustertest.Kill(t, victim)
	since := limited.Mark()
	rated.Mark()
	// A worker that starts now reconciles the limits while their
	// queues elect new leaders: it must find the ledgers, not mint.
	start(fmt.Sprintf("late on node %d", workerNodes[1]), workerNodes[1])
	t.Logf("killed node %d, leader of %s, while %d jobs held its tokens; workers on nodes %v, and one more started on node %d after the kill", victim, lnames.LimitTokens, held, workerNodes, workerNodes[1])
	eventually.True(t, wait, func() bool {
		return limited.Stats().MaxAfter >= killLimit
	}, "7 jobs of the limited queue begun after the kill run at once")
	t.Logf("7 jobs of the limited queue ran at once again %v after the kill", time.Since(killed).Round(time.Millisecond))
	clustertest.Start(t, victim)
	for _, name := range []string{lnames.LimitTokens, lnames.LimitLedger, rnames.RateTokens, rnames.RateLedger, rnames.RateReturn} {
		clustertest.AwaitOnline(t, workerNodes[0], name)
	}
	t.Logf("node %d rejoined the limits' queues %v after the kill", victim, time.Since(killed).Round(time.Millisecond))

	tally, err := ledger.WaitSettled(ctxT(t, 3*wait))
	if err != nil {
		t.Fatalf("%v: %v", tally, err)
	}
	// Every job has run; the tokens are all back (rabbitmqctl's counts,
	// ready and held, come with the queues' next statistics tick).
	eventually.Nil(t, wait, func() error {
		return tokensCounted(t, workerNodes[0], lnames.LimitTokens, "", killLimit)
	}, "the Limit's tokens all back, the workers idle")
	eventually.Nil(t, wait, func() error {
		return tokensCounted(t, workerNodes[0], rnames.RateTokens, rnames.RateReturn, killRate)
	}, "the Rate's tokens all back, the workers idle")
	stats, rateBegins := limited.Stats(), rated.BegunAfter(since)
	for _, stop := range stops {
		stop()
	}
	for _, name := range workers {
		t.Logf("%s: %d runs", name, runsOn(&limited, name)+runsOn(&rated, name))
	}
	t.Logf("limited queue: %v; %v", stats, tally)
	if stats.MaxRunning > killLimit {
		t.Errorf("%d jobs of the limited queue ran at once, %v after the kill, want at most %d: %v", stats.MaxRunning, stats.MaxAt.Sub(killed).Round(time.Millisecond), killLimit, stats)
	}
	if len(rateBegins) > 0 {
		// 5 for each second begun, and 5 for the skew of the workers'
		// clock of grants against the broker's.
		span := rateBegins[len(rateBegins)-1].At.Sub(since)
		t.Logf("rate queue: %d jobs begun in the %v after the kill", len(rateBegins), span.Round(time.Millisecond))
		if bound := killRate * (int(span/time.Second) + 2); len(rateBegins) > bound {
			t.Errorf("%d jobs of the rate queue began in the %v after the kill: more than %d per second allow (%d)", len(rateBegins), span, killRate, bound)
		}
	}

	// At rest, with every worker gone, on a node that stayed up: exactly
	// the tokens minted, and the ledgers say so.
	url := clustertest.URL(workerNodes[0])
	for _, c := range []struct {
		tokens, ledger string
		want           int
	}{{lnames.LimitTokens, lnames.LimitLedger, killLimit}, {rnames.RateTokens, rnames.RateLedger, killRate}} {
		eventually.Nil(t, wait, func() error {
			n, err := brokertest.Ready(url, c.tokens)
			if err == nil && n != c.want {
				err = fmt.Errorf("%s holds %d tokens ready, want %d", c.tokens, n, c.want)
			}
			return err
		}, "the tokens all ready")
		count, msgs, err := brokertest.ReadLedger(url, c.ledger)
		switch {
		case err != nil:
			t.Errorf("ledger: %v", err)
		case count != c.want || msgs != 1:
			t.Errorf("ledger %s holds %d messages counting %d, want one counting %d", c.ledger, msgs, count, c.want)
		default:
			t.Logf("%s: %d tokens, and its ledger says %d", c.tokens, c.want, count)
		}
	}
}

// tokensCounted is nil when token queue tokens holds want messages, ready
// or held, and return queue ret (if any) none, as rabbitmqctl on node n
// counts them.
func tokensCounted(t *testing.T, n int, tokens, ret string, want int) error {
	got := map[string]int{}
	for _, q := range clustertest.Queues(t, n, tokens) {
		got[q.Name] = q.Messages
	}
	if got[tokens] != want || (ret != "" && got[ret] != 0) {
		return fmt.Errorf("%s holds %d tokens, ready or held, and %q %d, want %d and 0", tokens, got[tokens], ret, got[ret], want)
	}
	return nil
}

// limitedQueue returns the config of a quorum queue of its own; it and
// every queue of its limits are deleted when t ends.
func limitedQueue(t *testing.T, what string) runtime.QueueConfig {
	name := queueName(t) + "." + what
	deleteAll(t, name)
	t.Cleanup(func() { clustertest.DeleteQueues(t, brokertest.LimitQueuesOf(name).All()...) })
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.MaxPriority = runtime.KindOf[job](), runtime.QueueQuorum, runtime.NoPriority
	q.Prefetch, q.Concurrency = 10, 10
	return q.WithDefaults()
}

// limitedWork is a handler that runs for d, recorded in runs as worker's
// and in ledger.
func limitedWork(runs *brokertest.Runs, ledger *clustertest.Ledger, worker string, d time.Duration) func(context.Context, job) error {
	return func(ctx context.Context, _ job) error {
		defer runs.Begin(worker)()
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		info, _ := runtime.InfoFromContext(ctx)
		ledger.Handled(info.ID)
		return nil
	}
}

// runsOn counts the runs of runs on worker.
func runsOn(runs *brokertest.Runs, worker string) int {
	n := 0
	for _, b := range runs.BegunAfter(time.Time{}) {
		if b.Worker == worker {
			n++
		}
	}
	return n
}

// TestLimitRetireSurvivesLedgerLeaderKill lowers a quorum queue's Limit
// from 7 to 4 while its ledger is led by a node of its own, and kills
// that node while the worker that lowers it retires tokens: each
// retirement changes the token queue and the ledger in one transaction,
// and the kill falls among them. Once the node is back, every job has
// run, and at rest the token queue holds exactly 4 tokens and the ledger
// says 4.
func TestLimitRetireSurvivesLedgerLeaderKill(t *testing.T) {
	clustertest.Require(t)
	const (
		from, to = 7, 4
		jobs     = 150
		work     = 600 * time.Millisecond
		tokens   = 1 // the node that mints, and leads the token queue
		ledgers  = 2 // the node that leads the ledger, and is killed
		workers  = 3 // the node the workers use first
	)
	q := limitedQueue(t, "retire")
	q.Limit = from
	names := brokertest.LimitQueuesOf(q.Name)
	ctx := ctxT(t, 10*wait)

	// The ledger, declared empty through node 2, is led by node 2; the
	// token queue, declared as node 1 mints, by node 1.
	if _, err := clustertest.Channel(t, ledgers).QueueDeclare(names.LimitLedger, true, false, false, false, map[string]any{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	minter := clustertest.Dial(t, tokens, rabbitmq.Options{})
	p, err := minter.AcquirePermit(ctx, q, "")
	if err != nil {
		t.Fatalf("first permit through node %d: %v", tokens, err)
	}
	p.Release()
	if err := minter.Close(); err != nil {
		t.Fatal(err)
	}
	if l := clustertest.Leader(t, workers, names.LimitTokens); l != tokens {
		t.Fatalf("token queue led by node %d, want %d", l, tokens)
	}
	if l := clustertest.Leader(t, workers, names.LimitLedger); l != ledgers {
		t.Fatalf("ledger led by node %d, want %d", l, ledgers)
	}

	prod, err := runtime.NewProducer(ctx, clustertest.Dial(t, workers, rabbitmq.Options{}), q)
	if err != nil {
		t.Fatal(err)
	}
	ledger := clustertest.NewLedger()
	ids, err := runtime.EnqueueMany(ctx, prod, q, make([]job, jobs))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		ledger.Confirmed(id)
	}
	var runs brokertest.Runs
	var stops []func()
	start := func(name string, n int, q runtime.QueueConfig) {
		b := clustertest.Dial(t, n, rabbitmq.Options{Nodes: clustertest.URLsAfter(n)})
		w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
		runtime.Handle(w, q, limitedWork(&runs, ledger, name, work))
		stop := brokertest.Run(t, w)
		stops = append(stops, func() { stop(); _ = b.Close() })
	}
	start("limit 7, node 3", workers, q)
	start("limit 7, node 1", tokens, q)
	eventually.True(t, wait, func() bool { return runs.Stats().Running == from }, "7 jobs hold tokens")

	lowered := q
	lowered.Limit = to
	mark := runs.Mark()
	start("limit 4, node 3", workers, lowered)
	eventually.True(t, wait, func() bool {
		for _, b := range runs.BegunAfter(mark) {
			if b.Worker == "limit 4, node 3" {
				return true
			}
		}
		return false
	}, "the worker of limit 4 runs a job")
	killed := clustertest.Kill(t, ledgers)
	t.Logf("killed node %d at %s, leader of %s, as the worker of limit %d began retiring tokens (%v after it started)", ledgers, killed.UTC().Format("15:04:05.000"), names.LimitLedger, to, killed.Sub(mark).Round(time.Millisecond))
	clustertest.Start(t, ledgers)
	clustertest.AwaitOnline(t, workers, names.LimitLedger)
	clustertest.AwaitOnline(t, workers, names.LimitTokens)
	t.Logf("node %d rejoined %v after the kill", ledgers, time.Since(killed).Round(time.Millisecond))

	tally, err := ledger.WaitSettled(ctxT(t, 3*wait))
	if err != nil {
		t.Fatalf("%v: %v", tally, err)
	}
	stats := runs.Stats()
	for _, stop := range stops {
		stop()
	}
	t.Logf("%v; %v", stats, tally)
	if stats.MaxRunning > from {
		t.Errorf("%d jobs ran at once, %v after the kill, want at most %d", stats.MaxRunning, stats.MaxAt.Sub(killed).Round(time.Millisecond), from)
	}
	url := clustertest.URL(workers)
	eventually.Nil(t, wait, func() error {
		n, err := brokertest.Ready(url, names.LimitTokens)
		if err == nil && n != to {
			err = fmt.Errorf("%s holds %d tokens ready, want %d", names.LimitTokens, n, to)
		}
		return err
	}, "the tokens retired down to the lowered limit")
	count, msgs, err := brokertest.ReadLedger(url, names.LimitLedger)
	switch {
	case err != nil:
		t.Errorf("ledger: %v", err)
	case count != to || msgs != 1:
		t.Errorf("ledger %s holds %d messages counting %d, want one counting %d", names.LimitLedger, msgs, count, to)
	default:
		t.Logf("%s: %d tokens, and its ledger says %d", names.LimitTokens, to, count)
	}
}
