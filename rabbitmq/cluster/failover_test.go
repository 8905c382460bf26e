package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/brokertest"
	"github.com/queuey/queuey/internal/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// leaderOf, as a kill target, is the node leading the scenario's queue at
// the moment of the kill.
const leaderOf = 0

// scenario is a run of jobs through a quorum queue led by node 1, with a
// producer and a worker each connected to a node, while nodes are killed
// with SIGKILL one after the other, each started again right away (a node
// takes about ten seconds to come back).
type scenario struct {
	jobs     int
	rate     int // enqueues per second
	producer int // node the producer dials
	worker   int // node the worker dials
	opts     rabbitmq.Options
	kills    []int // nodes, or leaderOf
}

// producers is how many goroutines enqueue at once.
const producers = 8

// killReport is what the clients saw around one kill.
type killReport struct {
	node            int
	leader          bool
	at              time.Time
	handlePause     time.Duration // longest stretch without a job handled
	confirmPause    time.Duration // longest stretch without an enqueue confirmed
	enqueueFailures int           // enqueues that failed (and were tried again) from the kill to the next
}

func (r killReport) String() string {
	what := fmt.Sprintf("node %d", r.node)
	if r.leader {
		what += " (queue leader)"
	}
	return fmt.Sprintf("kill %s: longest pause handling %v, confirming %v; %d enqueues failed and were tried again",
		what, r.handlePause.Round(time.Millisecond), r.confirmPause.Round(time.Millisecond), r.enqueueFailures)
}

// run runs s and returns the ledger and a report per kill. Kill k happens
// once k+1 shares of the jobs (of len(kills)+1) have been handled, after
// the previous killed node is back.
func (s scenario) run(t *testing.T) (clustertest.Tally, []killReport) {
	t.Helper()
	clustertest.Require(t)
	name := queueName(t)
	deleteAll(t, name)
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.MaxPriority = "job", runtime.QueueQuorum, 0
	q.Prefetch, q.Concurrency = 50, 50
	ctx := ctxT(t, 5*time.Minute)

	// Declared through node 1, q is led by node 1.
	if _, err := runtime.NewProducer(ctx, clustertest.Dial(t, 1, rabbitmq.Options{}), q); err != nil {
		t.Fatal(err)
	}
	p, err := runtime.NewProducer(ctx, clustertest.Dial(t, s.producer, s.opts), q)
	if err != nil {
		t.Fatal(err)
	}
	ledger := clustertest.NewLedger()
	var handled, confirmed clustertest.Gaps
	var (
		mu       sync.Mutex
		failures []time.Time
		count    int
		progress = make(chan struct{}, 1)
	)
	brokertest.RunWorker(t, clustertest.Dial(t, s.worker, s.opts), q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		handled.Mark(time.Now())
		if ledger.Handled(info.ID) {
			mu.Lock()
			count++
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
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
				confirmed.Mark(time.Now())
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
	for k, target := range s.kills {
		handledAtLeast((k + 1) * s.jobs / (len(s.kills) + 1))
		node := target
		if target == leaderOf {
			node = clustertest.Leader(t, otherThan(s.producer, s.worker, 0), name)
		}
		at := clustertest.Kill(t, node)
		if c := ledger.Tally().Confirmed; c >= s.jobs {
			t.Fatalf("kill %d came after all %d jobs were enqueued: lower the rate", k+1, c)
		}
		clustertest.Start(t, node)
		reports = append(reports, killReport{node: node, leader: target == leaderOf, at: at})
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
	tally, err := ledger.WaitSettled(ctx)
	if err != nil {
		t.Fatalf("%v: %v", tally, err)
	}
	end := time.Now()
	for i := range reports {
		to := end
		if i+1 < len(reports) {
			to = reports[i+1].at
		}
		reports[i].handlePause = handled.Longest(reports[i].at, to)
		reports[i].confirmPause = confirmed.Longest(reports[i].at, to)
		mu.Lock()
		for _, f := range failures {
			if !f.Before(reports[i].at) && f.Before(to) {
				reports[i].enqueueFailures++
			}
		}
		mu.Unlock()
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
	t.Logf("jobs: %v", tally)
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
