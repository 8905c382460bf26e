package cluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// TestQuorumHoldQueuesBounded defers 1,000 jobs by 1,000 distinct
// durations (1 to about 17.6 minutes) on a quorum queue: they wait in as
// many hold queues as the ladder has rungs for those durations (18, where
// classic hold queues would be 1,000), each quorum, and all 1,000 are
// there, none dropped and none back early.
func TestQuorumHoldQueuesBounded(t *testing.T) {
	clustertest.Require(t)
	const jobs = 1000
	delay := func(n int) time.Duration { return time.Minute + time.Duration(n)*997*time.Millisecond }
	name := queueName(t)
	deleteAll(t, name)
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType = runtime.KindOf[job](), runtime.QueueQuorum
	q.Delay = runtime.DelayQueue // hold queues on rungs, not the default ladder
	q.Prefetch, q.Concurrency = 200, 200
	ctx := ctxT(t, 3*wait)
	b := clustertest.Dial(t, 2, rabbitmq.Options{})
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]job, jobs)
	want := map[string]int{} // hold queue -> jobs it must hold
	for i := range all {
		all[i] = job{N: i}
		h, _, err := topology.Names{}.QuorumHold(name, admin.HoldDeferred, delay(i), runtime.DefaultGranularity)
		if err != nil {
			t.Fatal(err)
		}
		want[h.Name]++
	}
	if _, err := runtime.EnqueueMany(ctx, p, q, all); err != nil {
		t.Fatal(err)
	}
	var deferred atomic.Int32
	done := make(chan struct{})
	stop := brokertest.RunWorker(t, b, q, func(ctx context.Context, j job) error {
		if deferred.Add(1) == jobs {
			close(done)
		}
		return runtime.Defer(delay(j.N))
	})
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%d of %d jobs deferred: %v", deferred.Load(), jobs, ctx.Err())
	}
	stop() // every deferral is confirmed before its job is acked
	if got := deferred.Load(); got != jobs {
		t.Fatalf("%d runs, want %d: a job came back early", got, jobs)
	}

	ch := clustertest.Channel(t, 2)
	holds := 0
	for _, hq := range clustertest.Queues(t, 2, name+topology.DefaultDeferredSuffix+".") {
		holds++
		if hq.Type != "quorum" {
			t.Errorf("hold queue %q is %s, want quorum", hq.Name, hq.Type)
		}
		n, ok := want[hq.Name]
		if !ok {
			t.Errorf("hold queue %q not on the ladder", hq.Name)
			continue
		}
		got, err := ch.QueueDeclarePassive(hq.Name, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("inspect %q: %v", hq.Name, err)
		}
		if got.Messages != n {
			t.Errorf("hold queue %q holds %d jobs, want %d", hq.Name, got.Messages, n)
		}
	}
	t.Logf("%d distinct deferrals wait in %d quorum hold queues (at most %d for any delays)", jobs, holds, len(topology.QuorumRungs(runtime.DefaultGranularity)))
	if holds != len(want) {
		t.Errorf("%d hold queues, want %d", holds, len(want))
	}
}
