package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestLongTransaction: a transaction that enqueues, then runs the trigger
// early (SET CONSTRAINTS ALL IMMEDIATE, as Django's check_constraints()
// does) and stays open for seconds, delays no other job: jobs committed
// meanwhile, one at a time and each waited for, are all handled while it
// is still open; its own job is handled once it commits.
func TestLongTransaction(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	idle := make(chan struct{}, 1)
	r := &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()}
	outbox.SetHooks(r, nil, func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	brokertest.Run(t, r)
	select {
	case <-idle:
	case <-time.After(wait):
		t.Fatal("the relay did not go idle")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	long, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = long.Rollback(context.Background()) }()
	longID, err := runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(long)), q, ping{N: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := long.Exec(ctx, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	// Each job is committed once the one before is handled, so each
	// finds the relay in another state: idle, in a spell, waiting for
	// the producers that skipped; for 3s at least, so that the
	// transaction stays open for some time.
	opened := time.Now()
	others := 0
	var slowest time.Duration
	for i := 0; i < 10 || time.Since(opened) < 3*time.Second; i++ {
		others++
		id := enqueue(t, pool, q, i, true)
		committed := time.Now()
		h.waitDistinct(t, i+1)
		if h.snapshot()[id] != 1 {
			t.Fatalf("job %d (%q) not handled while the long transaction is open; handled %v", i, id, h.snapshot())
		}
		h.mu.Lock()
		slowest = max(slowest, h.at[id].Sub(committed))
		h.mu.Unlock()
	}
	t.Logf("%d jobs handled while the transaction was open for %v; the slowest %v after its commit", others, time.Since(opened).Round(time.Millisecond), slowest)
	if h.snapshot()[longID] != 0 {
		t.Fatalf("the open transaction's job %q was handled before it committed", longID)
	}
	if err := long.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	h.waitDistinct(t, others+1)
	if h.snapshot()[longID] != 1 {
		t.Fatalf("the long transaction's job %q not handled after its commit", longID)
	}
}
