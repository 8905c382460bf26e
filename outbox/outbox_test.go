package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestGeneratedEnqueue enqueues with generated code through a pgx and a
// database/sql transaction, and checks the job the worker gets: its ID,
// headers and priority as enqueued.
func TestGeneratedEnqueue(t *testing.T) {
	pool, schema := database(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quiet()))
	t.Cleanup(func() { _ = b.Close() })

	type got struct {
		job  emails.SendEmail
		info runtime.Info
	}
	jobs := make(chan got, 4)
	w := runtime.NewWorker(b)
	emails.HandleSendEmail(w, func(ctx context.Context, job emails.SendEmail) error {
		info, _ := runtime.InfoFromContext(ctx)
		jobs <- got{job, info}
		return nil
	})
	brokertest.Run(t, w)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, PollInterval: 50 * time.Millisecond})

	var pgxID string
	err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
		var err error
		pgxID, err = emails.EnqueueSendEmail(ctx, outbox.Producer(outbox.PgxTx(tx)), emails.SendEmail{To: "pgx@example.com"},
			runtime.WithPriority(3), runtime.WithHeaders(map[string]string{"traceparent": "00-1"}))
		return err
	})
	if err != nil {
		t.Fatalf("EnqueueSendEmail in a pgx transaction: %v", err)
	}

	db := sql.OpenDB(stdlib.GetConnector(*schemaPool(t, schema).Config().ConnConfig))
	t.Cleanup(func() { _ = db.Close() })
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sqlID, err := emails.EnqueueSendEmail(ctx, outbox.Producer(outbox.SQLTx(tx)), emails.SendEmail{To: "sql@example.com"})
	if err != nil {
		t.Fatalf("EnqueueSendEmail in a database/sql transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	seen := map[string]got{}
	for len(seen) < 2 {
		select {
		case g := <-jobs:
			seen[g.info.ID] = g
		case <-ctx.Done():
			t.Fatalf("handled %d jobs, want 2", len(seen))
		}
	}
	if g, ok := seen[pgxID]; !ok || g.job.To != "pgx@example.com" || g.info.Headers["traceparent"] != "00-1" || g.info.Attempt != 1 || g.info.MaxAttempts != emails.SendEmailQueue.MaxAttempts {
		t.Errorf("pgx job %q: got %+v", pgxID, g)
	}
	if g, ok := seen[sqlID]; !ok || g.job.To != "sql@example.com" {
		t.Errorf("database/sql job %q: got %+v", sqlID, g)
	}
}

// TestOnlyCommitted enqueues in 1,000 transactions and rolls half of them
// back: exactly the committed half's jobs are handled, once each.
func TestOnlyCommitted(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()})

	const n = 1000
	committed := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				id := enqueue(t, pool, q, i, i%2 == 0)
				if i%2 == 0 {
					mu.Lock()
					committed[id] = true
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	h.waitDistinct(t, n/2)
	waitEmpty(t, pool)
	for id, c := range h.snapshot() {
		if !committed[id] {
			t.Errorf("job %q handled, but its transaction rolled back", id)
		}
		if c != 1 {
			t.Errorf("job %q handled %d times, want once", id, c)
		}
	}
	if len(committed) != n/2 {
		t.Fatalf("%d committed, want %d", len(committed), n/2)
	}
}

// waitEmpty waits until the outbox holds no row.
func waitEmpty(t *testing.T, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	eventually.Nil(t, wait, func() error {
		var left int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM queuey_outbox").Scan(&left); err != nil {
			t.Fatalf("count rows: %v", err)
		}
		if left != 0 {
			return fmt.Errorf("%d rows left in the outbox", left)
		}
		return nil
	}, "the outbox empty")
}

// TestTwoRelays runs two relays on one outbox under load: each job is
// handled once.
func TestTwoRelays(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	for range 2 {
		brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, BatchSize: 20, Logger: quiet()})
	}
	const n = 2000
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 * 10 {
				err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
					jobs := make([]ping, 10)
					_, err := runtime.EnqueueMany(ctx, outbox.Producer(outbox.PgxTx(tx)), q, jobs)
					return err
				})
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	h.waitDistinct(t, n)
	waitEmpty(t, pool)
	for id, c := range h.snapshot() {
		if c != 1 {
			t.Errorf("job %q handled %d times, want once", id, c)
		}
	}
}

// TestMissingQueue: a row for a queue that still does not exist after the
// relay's grace is moved to queuey_outbox_dead with the reason, and the
// rows behind it are relayed meanwhile.
func TestMissingQueue(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)

	missing := testQueue(t)
	missing.Name += ".missing"
	before := enqueue(t, pool, q, 1, true)
	lost := enqueue(t, pool, missing, 2, true)
	lostDelayed := enqueue(t, pool, missing, 3, true, runtime.WithDelay(time.Second))
	after := enqueue(t, pool, q, 4, true)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet(), MissingQueueGrace: 2 * time.Second})

	h.waitDistinct(t, 2)
	waitEmpty(t, pool)
	got := h.snapshot()
	if got[before] != 1 || got[after] != 1 {
		t.Errorf("handled %v, want %q and %q once each", got, before, after)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	rows, err := pool.Query(ctx, "SELECT id, queue, reason FROM queuey_outbox_dead ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	type dead struct{ ID, Queue, Reason string }
	deads, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dead])
	if err != nil {
		t.Fatal(err)
	}
	if len(deads) != 2 || deads[0].ID != lost || deads[1].ID != lostDelayed {
		t.Fatalf("dead rows %+v, want %q and %q", deads, lost, lostDelayed)
	}
	for _, d := range deads {
		if d.Queue != missing.Name || !strings.Contains(d.Reason, missing.Name) || !strings.Contains(d.Reason, "does not exist") || !strings.Contains(d.Reason, "MissingQueueGrace") {
			t.Errorf("dead row %+v: want queue %q and a reason that says it does not exist and for how long it was tried", d, missing.Name)
		}
	}
}

// TestDelayCountsFromEnqueue: a delayed job, relayed late, is handled no
// earlier than its delay from the enqueue.
func TestDelayCountsFromEnqueue(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)

	const delay = 3 * time.Second
	start := time.Now()
	id := enqueue(t, pool, q, 1, true, runtime.WithDelay(delay))
	// The relay comes late; the job's wait goes on meanwhile. It runs
	// on a backend of its own, which did not declare the queue: it learns
	// how the queue holds waits from the row.
	time.Sleep(time.Second) // real time passes before the relay starts: what the test is about
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: dial(t), Logger: quiet()})
	h.waitDistinct(t, 1)
	h.mu.Lock()
	at := h.at[id]
	h.mu.Unlock()
	if early := start.Add(delay).Sub(at); early > 0 {
		t.Fatalf("delayed job handled %v before its delay from the enqueue passed", early)
	}
}

// TestNotifyWakes: a commit wakes an idle relay, whose poll interval is
// far beyond the test's wait, so only the notification can have woken it.
func TestNotifyWakes(t *testing.T) {
	pool, _ := database(t)
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quiet()))
	t.Cleanup(func() { _ = b.Close() })
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)

	listening := make(chan struct{}, 10)
	idle := make(chan struct{}, 100)
	r := &outbox.Relay{Pool: pool, Backend: b, PollInterval: time.Hour}
	outbox.SetHooks(r, func() { listening <- struct{}{} }, func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	brokertest.Run(t, r)
	for _, ch := range []chan struct{}{listening, idle} {
		select {
		case <-ch:
		case <-time.After(wait):
			t.Fatal("relay did not start listening and go idle")
		}
	}
	// Drain the idle events of the round the listener's start triggered.
	for {
		select {
		case <-idle:
			continue
		case <-time.After(100 * time.Millisecond):
		}
		break
	}
	id := enqueue(t, pool, q, 1, true)
	h.waitDistinct(t, 1)
	if h.snapshot()[id] != 1 {
		t.Fatalf("job %q not handled", id)
	}
}

// TestRelayFieldsChecked: Run refuses a relay without a pool or backend,
// and one whose tables are missing, naming what to do.
func TestRelayFieldsChecked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quiet()))
	t.Cleanup(func() { _ = b.Close() })
	if err := (&outbox.Relay{Backend: b}).Run(ctx); err == nil || !strings.Contains(err.Error(), "Pool") {
		t.Errorf("Run without a pool: %v, want an error naming Pool", err)
	}
	pool, schema := database(t)
	if _, err := pool.Exec(ctx, "DROP TABLE "+schema+".queuey_outbox"); err != nil {
		t.Fatal(err)
	}
	err := (&outbox.Relay{Pool: pool, Backend: b}).Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("Run without the table: %v, want an error naming Migrate", err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate a third time: %v", err)
	}
}

// TestNoLostWake commits bursts of concurrent transactions to a relay that
// never polls (its poll interval is far beyond the test's wait): while it
// is busy, committing producers skip their notification, so each burst is
// handled in full only if the relay's handshake with them loses no
// commit.
func TestNoLostWake(t *testing.T) {
	pool, _ := database(t)
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quiet()))
	t.Cleanup(func() { _ = b.Close() })
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, BatchSize: 5, PollInterval: time.Hour})

	total := 0
	for burst := range 30 {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 1 + (burst+g)%7 {
					enqueue(t, pool, q, i, true)
				}
			})
			total += 1 + (burst+g)%7
		}
		wg.Wait()
		h.waitDistinct(t, total)
	}
}
