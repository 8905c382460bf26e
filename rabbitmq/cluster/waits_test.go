package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

type job struct{ N int }

// early is how much sooner than its delay a wait may seem to end: only the
// broker's millisecond clock can make a wait look shorter.
const early = 5 * time.Millisecond

// TestQuorumWaitsSurviveLeaderKill holds retries and deferrals in quorum
// hold queues led by node 1 while node 1 is killed and restarted, with the
// worker on node 2: every job comes back, none before its delay, none lost.
func TestQuorumWaitsSurviveLeaderKill(t *testing.T) {
	clustertest.Require(t)
	const (
		jobs       = 200
		retryAfter = 8 * time.Second
		deferFor   = 10 * time.Second
	)
	name := queueName(t)
	deleteAll(t, name)
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType = runtime.KindOf[job](), runtime.QueueQuorum
	q.Delay = runtime.DelayQueue // hold queues on rungs, not the default ladder
	q.Prefetch, q.Concurrency = 50, 50
	q.RetryBase, q.RetryMax = retryAfter, retryAfter

	// Declared through node 1, q and its hold queues are led by node 1.
	ctx := ctxT(t, 3*wait)
	p1, err := runtime.NewProducer(ctx, clustertest.Dial(t, 1, rabbitmq.Options{}), q)
	if err != nil {
		t.Fatal(err)
	}
	ch := clustertest.Channel(t, 1)
	for _, w := range []struct {
		kind  admin.HoldKind
		delay time.Duration
	}{{admin.HoldRetry, retryAfter}, {admin.HoldDeferred, deferFor}} {
		h, _, err := topology.Names{}.QuorumHold(name, w.kind, w.delay, runtime.DefaultGranularity)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.QueueDeclare(h.Name, true, false, false, false, h.Args); err != nil {
			t.Fatalf("declare %q: %v", h.Name, err)
		}
	}
	ledger := clustertest.NewLedger()
	for i := range jobs {
		id, err := runtime.Enqueue(ctx, p1, q, job{N: i})
		if err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
		ledger.Confirmed(id)
	}

	// The worker, on node 2, fails or defers each job's first run.
	var (
		mu        sync.Mutex
		waitEnd   = map[string]time.Time{} // earliest a job may come back
		cameEarly []string
	)
	firstRuns := make(chan struct{}, jobs)
	brokertest.RunWorker(t, clustertest.Dial(t, 2, rabbitmq.Options{}), q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		end, waited := waitEnd[info.ID]
		if !waited {
			d := retryAfter
			if j.N%2 == 1 {
				d = deferFor
			}
			waitEnd[info.ID] = now.Add(d)
			firstRuns <- struct{}{}
			if j.N%2 == 1 {
				return runtime.Defer(d)
			}
			return errors.New("fail once")
		}
		if now.Before(end.Add(-early)) {
			cameEarly = append(cameEarly, info.ID)
		}
		ledger.Handled(info.ID)
		return nil
	})
	for range jobs {
		select {
		case <-firstRuns:
		case <-ctx.Done():
			t.Fatalf("first runs: %v", ctx.Err())
		}
	}
	for _, hq := range clustertest.Queues(t, 2, name) {
		if hq.Type != "quorum" || clustertest.Node(hq.Leader) != 1 {
			t.Fatalf("queue %q is %s led by %s, want quorum led by node 1 (declared through it)", hq.Name, hq.Type, hq.Leader)
		}
	}
	clustertest.Kill(t, 1)
	if tally := ledger.Tally(); tally.Handled > 0 {
		t.Fatalf("%d jobs were back before node 1 was killed: make the waits longer", tally.Handled)
	}
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		clustertest.Start(t, 1)
	}()
	tally, err := ledger.WaitSettled(ctx)
	<-restarted
	if err != nil {
		t.Fatalf("%v: %v", tally, err)
	}
	t.Logf("leader of q and its hold queues killed while %d jobs waited: %v", jobs, tally)
	mu.Lock()
	defer mu.Unlock()
	if len(cameEarly) > 0 {
		t.Errorf("%d jobs came back before their wait ended: %v", len(cameEarly), cameEarly)
	}
	if tally.Handled != jobs || len(tally.Lost) != 0 {
		t.Errorf("tally %v, want all %d handled", tally, jobs)
	}
}
