package rabbitmq

import (
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// TestHoldLeaseFresh checks when a hold queue is declared again: a classic
// one (x-expires = 2×TTL) once a quarter of its lease has passed since the
// declare was sent, a quorum one (no x-expires) never again, and any after
// forget.
func TestHoldLeaseFresh(t *testing.T) {
	classic, _, err := topology.Names{}.Hold("q", topology.Retry, 10*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	quorum := topology.Queue{Name: "q.retry.quorum", Args: map[string]any{topology.ArgQueueType: "quorum"}}
	t0 := time.Now()
	var l holdLeases
	if l.fresh(classic, t0) || l.fresh(quorum, t0) {
		t.Fatal("a hold queue never declared counts as fresh")
	}
	l.renewed(classic, t0)
	l.renewed(quorum, t0)
	for _, tc := range []struct {
		q     topology.Queue
		after time.Duration
		want  bool
	}{
		{classic, 0, true},
		{classic, 5*time.Second - time.Millisecond, true}, // lease 20s: a quarter is 5s
		{classic, 5 * time.Second, false},
		{quorum, 1000 * time.Hour, true},
	} {
		if got := l.fresh(tc.q, t0.Add(tc.after)); got != tc.want {
			t.Errorf("%s %v after its declare: fresh = %v, want %v", tc.q.Name, tc.after, got, tc.want)
		}
	}
	l.renewed(classic, t0.Add(-time.Second)) // an older declare that returned later
	if !l.fresh(classic, t0.Add(4*time.Second+500*time.Millisecond)) {
		t.Error("an older declare replaced a newer one")
	}
	l.forget(classic)
	if l.fresh(classic, t0) {
		t.Error("fresh after forget")
	}
}

// TestHoldLeaseSweep checks that leases that are over are dropped once the
// cache grows, and leaseless ones are kept.
func TestHoldLeaseSweep(t *testing.T) {
	t0 := time.Now()
	var l holdLeases
	quorum := topology.Queue{Name: "quorum", Args: map[string]any{}}
	l.renewed(quorum, t0)
	for i := range minSweep - 2 {
		q, _, err := topology.Names{}.Hold(fmt.Sprint("q", i), topology.Retry, time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		l.renewed(q, t0)
	}
	q, _, _ := topology.Names{}.Hold("last", topology.Retry, time.Second, time.Second)
	l.renewed(q, t0.Add(time.Minute))
	if len(l.declared) != 2 {
		t.Errorf("%d leases kept after a sweep, want 2 (the leaseless one and the newest)", len(l.declared))
	}
	if !l.fresh(quorum, t0.Add(time.Hour)) {
		t.Error("the leaseless hold queue was swept")
	}
}
