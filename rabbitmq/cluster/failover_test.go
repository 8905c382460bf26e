package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// leaderOf, as a kill target, is the node leading the scenario's queue at
// the moment of the kill.
const leaderOf = 0

// scenario is a run of jobs through a quorum queue led by node 1, with a
// producer and a worker each connected first to a node, while nodes are
// killed with SIGKILL one after the other. A killed node is started again
// after downFor (starting takes about ten seconds more), and the next
// kill waits until it has rejoined the queue.
type scenario struct {
	jobs     int
	rate     int // enqueues per second
	producer int // node the producer dials first
	worker   int // node the worker dials first
	opts     rabbitmq.Options
	failover bool          // the producer and worker have the other nodes in Options.Nodes
	kills    []int         // nodes, or leaderOf
	downFor  time.Duration // from a kill to starting the node again
	// spacing, when not zero, is how many jobs are handled before the
	// first kill, and after a killed node has rejoined before the next.
	// When zero, kill k waits for k+1 shares of the jobs (of
	// len(kills)+1) to be handled.
	spacing int
}

// producers is how many goroutines enqueue at once.
const producers = 8

// killReport is what the clients saw after one kill, until the next one
// (or the end of the run). A pause counts for the kill it ended after: the
// one that spans the next kill is the next kill's.
type killReport struct {
	node            int
	role            string // what was connected to the node first, or that it led the queue
	at              time.Time
	handlePause     time.Duration // longest stretch without a job handled
	confirmPause    time.Duration // longest stretch without an enqueue confirmed
	enqueueFailures int           // enqueues that failed (and were tried again)
	duplicates      int           // runs of jobs handled before
	lost            int           // jobs confirmed then and never handled nor dead
}

func (r killReport) String() string {
	what := fmt.Sprintf("node %d", r.node)
	if r.role != "" {
		what += " (" + r.role + ")"
	}
	return fmt.Sprintf("kill %s: longest pause handling %v, confirming %v; %d enqueues failed and were tried again; %d duplicates, %d lost",
		what, r.handlePause.Round(time.Millisecond), r.confirmPause.Round(time.Millisecond), r.enqueueFailures, r.duplicates, r.lost)
}

// run runs s and returns the ledger and a report per kill.
func (s scenario) run(t *testing.T) (clustertest.Tally, []killReport) {
	t.Helper()
	clustertest.Require(t)
	name := queueName(t)
	deleteAll(t, name)
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.MaxPriority = runtime.KindOf[job](), runtime.QueueQuorum, runtime.NoPriority
	q.Prefetch, q.Concurrency = 50, 50
	ctx := ctxT(t, 5*time.Minute)

	// Declared through node 1, q is led by node 1.
	if _, err := runtime.NewProducer(ctx, clustertest.Dial(t, 1, rabbitmq.Options{}), q); err != nil {
		t.Fatal(err)
	}
	optsFor := func(n int) rabbitmq.Options {
		o := s.opts
		if s.failover {
			o.Nodes = clustertest.URLsAfter(n)
		}
		return o
	}
	p, err := runtime.NewProducer(ctx, clustertest.Dial(t, s.producer, optsFor(s.producer)), q)
	if err != nil {
		t.Fatal(err)
	}
	ledger := clustertest.NewLedger()
	var handled, confirmed clustertest.Gaps
	var (
		mu          sync.Mutex
		failures    []time.Time
		dups        []time.Time
		confirmedAt = map[string]time.Time{}
		count       int
		progress    = make(chan struct{}, 1)
	)
	brokertest.RunWorker(t, clustertest.Dial(t, s.worker, optsFor(s.worker)), q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		now := time.Now()
		handled.Mark(now)
		first := ledger.Handled(info.ID)
		mu.Lock()
		if first {
			count++
		} else {
			dups = append(dups, now)
		}
		mu.Unlock()
		select {
		case progress <- struct{}{}:
		default:
		}
		return nil
	})

	// The producer enqueues at a steady rate from a few goroutines, so a
	// slow confirm does not slow the rest; a failed enqueue is tried again
	// with the same ID until the broker confirms it.
	produced := make(chan error, producers)
	next := make(chan int)
	go func() {
		defer close(next)
		tick := time.NewTicker(time.Second / time.Duration(s.rate))
		defer tick.Stop()
		for i := range s.jobs {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range producers {
		go func() {
			for i := range next {
				id := fmt.Sprintf("job-%05d", i)
				for {
					ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
					_, err := runtime.Enqueue(ectx, p, q, job{N: i}, runtime.WithID(id))
					cancel()
					if err == nil {
						break
					}
					if ctx.Err() != nil {
						produced <- fmt.Errorf("job %d: %w (last: %v)", i, ctx.Err(), err)
						return
					}
					mu.Lock()
					failures = append(failures, time.Now())
					mu.Unlock()
					select {
					case <-time.After(100 * time.Millisecond): // before trying again, not a synchronisation
					case <-ctx.Done():
					}
				}
				now := time.Now()
				confirmed.Mark(now)
				mu.Lock()
				confirmedAt[id] = now
				mu.Unlock()
				ledger.Confirmed(id)
			}
			produced <- nil
		}()
	}

	handledAtLeast := func(n int) {
		for {
			mu.Lock()
			c := count
			mu.Unlock()
			if c >= n {
				return
			}
			select {
			case <-progress:
			case <-ctx.Done():
				t.Fatalf("%d jobs handled, waiting for %d: %v", c, n, ctx.Err())
			}
		}
	}
	var reports []killReport
	back := 0 // jobs handled when the last killed node had rejoined
	for k, target := range s.kills {
		if s.spacing > 0 {
			handledAtLeast(back + s.spacing)
		} else {
			handledAtLeast((k + 1) * s.jobs / (len(s.kills) + 1))
		}
		// Every node runs now (the last killed one has rejoined), so any
		// of them can tell the leader.
		node, role := target, ""
		switch target {
		case leaderOf:
			node, role = clustertest.Leader(t, otherThan(s.producer, s.worker, 0), name), "queue leader"
		case s.producer:
			role = "the producer's first node"
		case s.worker:
			role = "the worker's first node"
		}
		at := clustertest.Kill(t, node)
		if c := ledger.Tally().Confirmed; c >= s.jobs {
			t.Fatalf("kill %d came after all %d jobs were enqueued: lower the rate", k+1, c)
		}
		reports = append(reports, killReport{node: node, role: role, at: at})
		if s.downFor > 0 {
			down := time.NewTimer(s.downFor) // how long the node stays down, not a synchronisation
			select {
			case <-down.C:
			case <-ctx.Done():
				down.Stop()
				t.Fatalf("node %d down: %v", node, ctx.Err())
			}
		}
		clustertest.Start(t, node)
		clustertest.AwaitOnline(t, node, name)
		mu.Lock()
		back = count
		mu.Unlock()
	}
	for range producers {
		select {
		case err := <-produced:
			if err != nil {
				t.Fatalf("producer: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("producer: %v", ctx.Err())
		}
	}
	// A run that loses jobs still reports its kills: which one lost them.
	tally, err := ledger.WaitSettled(ctx)
	if err != nil {
		t.Errorf("%v: %v", tally, err)
	}
	end := time.Now()
	if len(reports) > 0 {
		// What pauses are without a kill, to weigh those with one.
		t.Logf("before the first kill: longest pause handling %v, confirming %v",
			handled.LongestWithin(time.Time{}, reports[0].at).Round(time.Millisecond),
			confirmed.LongestWithin(time.Time{}, reports[0].at).Round(time.Millisecond))
	}
	mu.Lock()
	defer mu.Unlock()
	within := func(ts time.Time, i int, to time.Time) bool { return !ts.Before(reports[i].at) && ts.Before(to) }
	for i := range reports {
		to := end
		if i+1 < len(reports) {
			to = reports[i+1].at
		}
		reports[i].handlePause = handled.LongestEnding(reports[i].at, to)
		reports[i].confirmPause = confirmed.LongestEnding(reports[i].at, to)
		for _, f := range failures {
			if within(f, i, to) {
				reports[i].enqueueFailures++
			}
		}
		for _, d := range dups {
			if within(d, i, to) {
				reports[i].duplicates++
			}
		}
		for _, id := range tally.Lost {
			if within(confirmedAt[id], i, to) {
				reports[i].lost++
			}
		}
	}
	return tally, reports
}

// otherThan returns the first node that is none of the given ones.
func otherThan(nodes ...int) int {
	for n := 1; n <= clustertest.Nodes; n++ {
		if n != nodes[0] && n != nodes[1] && n != nodes[2] {
			return n
		}
	}
	return 1
}

// TestQuorumLeaderKill runs 5,000 jobs through a quorum queue led by node
// 1, enqueued through node 2 and handled through node 3, and kills the
// leader midway: nothing confirmed is lost. The pauses it logs are what
// handling and confirms saw around the kill.
func TestQuorumLeaderKill(t *testing.T) {
	tally, reports := scenario{
		jobs:     5000,
		rate:     250,
		producer: 2,
		worker:   3,
		kills:    []int{leaderOf},
	}.run(t)
	t.Logf("leader killed; jobs: %v", tally)
	for _, r := range reports {
		t.Log(r)
		if r.node != 1 {
			t.Errorf("killed node %d as the leader, want node 1 (the queue was declared through it)", r.node)
		}
	}
	if len(tally.Lost) != 0 || tally.Handled != 5000 {
		t.Errorf("%v, want all 5000 handled and none lost: lost %v", tally, tally.Lost)
	}
}

// TestQuorumKills runs 5,000 jobs through a quorum queue led by node 1,
// enqueued through node 2 and handled through node 3, both with the
// other nodes to fail over to, and kills the worker's node, then the
// producer's, then the queue's leader, each for about twenty seconds
// (ten, then the time it takes to start): nothing confirmed is lost and
// every job is handled. The pauses it logs are what handling and confirms
// saw from each kill to the next; duplicates are deliveries in flight on
// a killed node, delivered again.
func TestQuorumKills(t *testing.T) {
	const jobs = 5000
	tally, reports := scenario{
		jobs:     jobs,
		rate:     60,
		producer: 2,
		worker:   3,
		failover: true,
		kills:    []int{3, 2, leaderOf},
		downFor:  10 * time.Second,
		spacing:  300,
	}.run(t)
	t.Logf("worker's node, producer's node and leader killed; jobs: %v", tally)
	for _, r := range reports {
		t.Log(r)
	}
	if len(reports) != 3 || reports[2].node != 1 {
		t.Errorf("killed %v, want nodes 3, 2 and then 1 as the leader (the queue was declared through it; killing followers does not move it)", reports)
	}
	if len(tally.Lost) != 0 || tally.Handled != jobs {
		t.Errorf("%v, want all %d handled and none lost: lost %v", tally, jobs, tally.Lost)
	}
}
