package cluster_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// ladderGranularity is the granularity of the ladder under the kill: short,
// so that waits of 1–20s pass several levels, and a ladder of its own
// (queuey.ladder.quorum.250ms), which no other test of the cluster uses.
const ladderGranularity = 250 * time.Millisecond

// TestQuorumLadderSurvivesLevelLeaderKill holds 2,000 delayed enqueues of
// 1–20s on the quorum delay ladder, finds the node that leads a level queue
// holding waits, and kills it while they wait, with the worker on another
// node: every job runs at least once, none before its delay. The levels
// dead-letter at least once, so a wait leaves a level only once the next
// hop has it, whichever node dies; a wait may come twice, and the test
// counts and logs those.
//
// A quorum queue's dead-letter worker publishes again what the next hop
// has not confirmed after dead_letter_worker_publisher_confirm_timeout:
// 3 minutes by default, which held a killed leader's waits that long (21
// to 1,093 of 2,000 jobs not run 80s after due in four runs of six).
// scripts/cluster.sh sets it to 5s, as docs/delays.md advises for a
// cluster; the test then says, every 10s, which levels hold waits, until
// every job has run or its bound ends.
func TestQuorumLadderSurvivesLevelLeaderKill(t *testing.T) {
	clustertest.Require(t)
	const (
		jobs     = 2000
		shortest = 1 * time.Second
		longest  = 20 * time.Second
	)
	name := queueName(t)
	deleteAll(t, name)
	// The cluster's nodes run the main broker's install, a 3.x: its
	// quorum ladder is not split by priority, and these waits are of one.
	l := topology.NewLadder(runtime.QueueQuorum, ladderGranularity, topology.Version{Major: 3})
	t.Cleanup(func() {
		// The ladder of this granularity is this test's alone on the
		// cluster: nothing is left on it when the test passes, and a
		// failed run's leftovers must not reach the next run's queue.
		var names []string
		for level := range l.Levels {
			names = append(names, l.Level(level))
		}
		clustertest.DeleteQueues(t, append(names, l.Unrouted())...)
	})
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.Delay = runtime.KindOf[job](), runtime.QueueQuorum, runtime.DelayLadder
	q.Prefetch, q.Concurrency = 100, 100
	opts := rabbitmq.Options{Granularity: ladderGranularity}

	// Declared through node 1, q and the ladder's level queues are led by
	// node 1 (the broker places a quorum queue's leader on the node that
	// declares it).
	ctx := ctxT(t, 10*wait)
	p1, err := runtime.NewProducer(ctx, clustertest.Dial(t, 1, opts), q)
	if err != nil {
		t.Fatal(err)
	}
	delayOf := func(i int) time.Duration {
		// Spread evenly over shortest..longest, whole granularities.
		d := shortest + time.Duration(i)*(longest-shortest)/(jobs-1)
		return d.Truncate(ladderGranularity)
	}
	ledger := clustertest.NewLedger()
	var (
		mu        sync.Mutex
		due       = map[string]time.Time{} // the earliest each job may run
		delays    = map[string]time.Duration{}
		runs      = map[string][]time.Time{}
		cameEarly []string
	)
	// 50 enqueues at once, so that the last are on the ladder long
	// before the first waits end.
	var g errgroup.Group
	g.SetLimit(50)
	for i := range jobs {
		g.Go(func() error {
			sent := time.Now()
			id, err := runtime.Enqueue(ctx, p1, q, job{N: i}, runtime.WithDelay(delayOf(i)))
			if err != nil {
				return fmt.Errorf("enqueue %d: %w", i, err)
			}
			mu.Lock()
			due[id] = sent.Add(delayOf(i))
			delays[id] = delayOf(i)
			mu.Unlock()
			ledger.Confirmed(id)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	enqueued := time.Now()

	// The level queues that hold waits, and their leaders: a quorum
	// queue's message count reaches rabbitmqctl on the broker's next
	// stats tick, seconds after the publish.
	var held []clustertest.Queue
	eventually.Nil(t, 10*time.Second, func() error {
		held = nil
		for _, lq := range clustertest.Queues(t, 2, l.Prefix()+".") {
			if lq.Messages > 0 && lq.Name != l.Unrouted() {
				held = append(held, lq)
			}
		}
		if len(held) == 0 {
			return fmt.Errorf("no level queue of %s holds a wait %v after the enqueues", l.Prefix(), time.Since(enqueued))
		}
		return nil
	}, "a level queue that holds waits")
	sort.Slice(held, func(i, j int) bool { return held[i].Messages > held[j].Messages })
	victim := clustertest.Node(held[0].Leader)
	if victim == 0 {
		t.Fatalf("level queue %q: leader %q is not a node of the cluster", held[0].Name, held[0].Leader)
	}
	var waiting int
	for _, lq := range held {
		waiting += lq.Messages
		t.Logf("level %s: %d waits, type %s, leader %s, members %v", lq.Name, lq.Messages, lq.Type, lq.Leader, lq.Members)
	}

	// The worker, on a node that stays up, counts each run.
	workerNode := victim%clustertest.Nodes + 1
	brokertest.RunWorker(t, clustertest.Dial(t, workerNode, opts), q, func(ctx context.Context, _ job) error {
		info, _ := runtime.InfoFromContext(ctx)
		now := time.Now()
		mu.Lock()
		if end, ok := due[info.ID]; ok && now.Before(end.Add(-early)) {
			cameEarly = append(cameEarly, fmt.Sprintf("%s %v early", info.ID, end.Sub(now)))
		}
		runs[info.ID] = append(runs[info.ID], now)
		mu.Unlock()
		ledger.Handled(info.ID)
		return nil
	})
	before := ledger.Tally()
	killed := clustertest.Kill(t, victim)
	t.Logf("killed node %d, leader of %s (%d waits), %v after the last enqueue; %d waits on %d levels, %d of %d jobs run before the kill, worker on node %d",
		victim, held[0].Name, held[0].Messages, killed.Sub(enqueued), waiting, len(held), before.Handled, jobs, workerNode)
	if before.Handled == jobs {
		t.Fatalf("every job ran before node %d was killed: make the waits longer", victim)
	}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		clustertest.Start(t, victim)
	}()
	// Every wait is due by now plus the longest delay; a minute more for
	// the node's restart and the hops.
	tally, err := ledger.WaitSettled(ctxT(t, longest+wait))
	<-restarted
	if err != nil {
		// The stall: expired waits held on a level, none ready, until
		// the new leader forwards them.
		t.Logf("%d waits not run %v after they were due: %v", len(tally.Lost), longest+wait, tally)
		for round := 1; len(tally.Lost) > 0; round++ {
			stalled := map[int]int{} // level: waits held
			others := map[string]int{}
			for _, lq := range clustertest.Queues(t, workerNode, "queuey") {
				held := false
				for level := range l.Levels {
					if lq.Name == l.Level(level) && lq.Messages > 0 {
						stalled[level], held = lq.Messages, true
					}
				}
				if !held && lq.Messages > 0 {
					others[lq.Name] = lq.Messages
				}
			}
			t.Logf("round %d: %d jobs not run; levels that hold waits (level: waits) %v; other queues that hold messages %v", round, len(tally.Lost), stalled, others)
			if tally, err = ledger.WaitSettled(ctxT(t, 10*time.Second)); err != nil && ctx.Err() != nil {
				mu.Lock()
				for _, id := range tally.Lost {
					t.Logf("lost %s: delay %v, due %s", id, delays[id], due[id].Format("15:04:05.000"))
				}
				mu.Unlock()
				t.Fatalf("after %d rounds: %v: %v", round, tally, err)
			}
		}
	}
	t.Logf("node %d killed while %d waits were on the ladder: %v", victim, waiting, tally)

	// Nothing stays on the ladder, nor in its unrouted queue: a copy left
	// on a level would come later as a duplicate, one in the unrouted
	// queue would be a wait that lost its way. The counts reach rabbitmqctl
	// on the broker's stats tick, so they are polled.
	eventually.Nil(t, 30*time.Second, func() error {
		for _, lq := range clustertest.Queues(t, workerNode, l.Prefix()+".") {
			if lq.Messages != 0 {
				return fmt.Errorf("ladder queue %q holds %d messages after every job ran", lq.Name, lq.Messages)
			}
		}
		return nil
	}, "the ladder empty")

	mu.Lock()
	defer mu.Unlock()
	var twice []string
	for id, at := range runs {
		if len(at) > 1 {
			twice = append(twice, fmt.Sprintf("%s due %s ran %d times", id, due[id].Format(time.TimeOnly), len(at)))
		}
	}
	sort.Strings(twice)
	if len(twice) > 0 {
		t.Logf("%d jobs ran more than once (at-least-once dead-lettering across the kill): %v", len(twice), twice)
	}
	if len(cameEarly) > 0 {
		t.Errorf("%d jobs ran before their delay: %v", len(cameEarly), cameEarly)
	}
	if tally.Handled != jobs || len(tally.Lost) != 0 || tally.Dead != 0 {
		t.Errorf("tally %v, want all %d handled and none dead", tally, jobs)
	}
}
