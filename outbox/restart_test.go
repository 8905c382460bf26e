package outbox_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestPostgresRestart restarts PostgreSQL twice while jobs are enqueued
// and relayed: every job whose commit succeeded is handled, and each
// restart repeats at most the batch in flight. It disrupts the database,
// so it runs only with QUEUEY_FAULTS set (make test-faults), on the local
// cluster QUEUEY_POSTGRES_CLUSTER names (default "15 main"), which it
// starts again when it ends, whatever happened.
func TestPostgresRestart(t *testing.T) {
	if os.Getenv("QUEUEY_FAULTS") == "" {
		t.Skip("restarts PostgreSQL: set QUEUEY_FAULTS=1 (make test-faults)")
	}
	cluster := strings.Fields(os.Getenv("QUEUEY_POSTGRES_CLUSTER"))
	if len(cluster) != 2 {
		cluster = []string{"15", "main"}
	}
	ctlcluster := func(action string) error {
		out, err := exec.Command("pg_ctlcluster", cluster[0], cluster[1], action).CombinedOutput()
		if err != nil {
			t.Logf("pg_ctlcluster %s %s %s: %v: %s", cluster[0], cluster[1], action, err, out)
		}
		return err
	}
	pool, _ := database(t)
	t.Cleanup(func() { // before the schema is dropped
		if exec.Command("pg_ctlcluster", cluster[0], cluster[1], "status").Run() != nil {
			_ = ctlcluster("start")
		}
	})
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	const batch = 20
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, BatchSize: batch, PollInterval: 100 * time.Millisecond, Logger: quiet()})

	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	var (
		mu        sync.Mutex
		committed []string
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				var ids []string
				err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
					var err error
					ids, err = runtime.EnqueueMany(ctx, outbox.Producer(outbox.PgxTx(tx)), q, make([]ping, 5))
					return err
				})
				if err != nil {
					// The database is away, or the commit's outcome
					// unknown: such jobs may or may not be handled.
					time.Sleep(50 * time.Millisecond) // paces the retries of the load while the database is away
					continue
				}
				mu.Lock()
				committed = append(committed, ids...)
				mu.Unlock()
			}
		})
	}
	const restarts = 2
	for range restarts {
		time.Sleep(time.Second) // a second of load between restarts
		if err := ctlcluster("restart"); err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal("restart failed")
		}
	}
	time.Sleep(time.Second) // a second of load after the last restart
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	ids := committed
	mu.Unlock()
	h.waitDistinct(t, len(ids))
	got := h.snapshot()
	duplicates := 0
	for _, id := range ids {
		switch c := got[id]; {
		case c == 0:
			t.Errorf("committed job %q lost", id)
		case c > 1:
			duplicates += c - 1
		}
	}
	t.Logf("%d committed jobs, %d restarts, %d duplicates", len(ids), restarts, duplicates)
	if duplicates > restarts*batch {
		t.Errorf("%d duplicates after %d restarts, want at most %d", duplicates, restarts, restarts*batch)
	}
}
