package outbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestDuplicateID: a job ID is a label. A second enqueue with the ID of a
// row still pending, in its transaction or another, neither fails nor
// aborts the transaction, and both jobs are published with the ID.
func TestDuplicateID(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
		p := outbox.Producer(outbox.PgxTx(tx))
		for i := range 2 {
			if _, err := runtime.Enqueue(ctx, p, q, ping{N: i}, runtime.WithID("order-42")); err != nil {
				return err
			}
		}
		// The transaction is still usable.
		_, err := tx.Exec(ctx, "SELECT 1")
		return err
	})
	if err != nil {
		t.Fatalf("two enqueues with one ID in one transaction: %v", err)
	}
	if id := enqueue(t, pool, q, 3, true, runtime.WithID("order-42")); id != "order-42" {
		t.Fatalf("enqueue returned ID %q, want order-42", id)
	}
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()})
	deadline := time.After(wait)
	for h.snapshot()["order-42"] < 3 {
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("handled %v, want order-42 three times", h.snapshot())
		}
	}
}

// TestIDRefusedBeforeInsert: an ID the wire cannot carry fails its
// enqueue, naming the limit, before the insert: the transaction goes on
// and commits what else it did.
func TestIDRefusedBeforeInsert(t *testing.T) {
	pool, _ := database(t)
	q := testQueue(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
		p := outbox.Producer(outbox.PgxTx(tx))
		_, err := runtime.Enqueue(ctx, p, q, ping{}, runtime.WithID(strings.Repeat("i", 300)))
		if err == nil || !strings.Contains(err.Error(), "over 255") {
			t.Errorf("enqueue with a 300-byte ID: %v, want an error naming the 255-byte limit", err)
		}
		_, err = runtime.Enqueue(ctx, p, q, ping{})
		return err
	})
	if err != nil {
		t.Fatalf("the transaction after a refused enqueue: %v", err)
	}
	if left, _ := rowsLeft(t, pool); left != 1 {
		t.Fatalf("%d rows in the outbox, want the one good job", left)
	}
}

// TestMigrateExisting: an outbox made by the schema before IDs became
// labels is brought up to date by Migrate: rows it holds are kept and
// relayed, a second row with a pending row's ID is accepted, a row
// written before the rules that breaks them is moved aside, and the
// rules refuse such rows from then on.
func TestMigrateExisting(t *testing.T) {
	pool, schema := database(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	old, err := os.ReadFile("testdata/schema_before_labels.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "DROP TABLE queuey_outbox, queuey_outbox_dead; DROP FUNCTION queuey_outbox_notify()"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, string(old)); err != nil {
		t.Fatalf("the earlier schema: %v", err)
	}
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	insert := `INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, payload, enqueued_at) VALUES ($1, $2, $3, 0, $4, '\x81a14e01', now())`
	if _, err := pool.Exec(ctx, insert, "kept", q.Name, q.Kind, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, insert, "kept", q.Name, q.Kind, 5); err == nil {
		t.Fatal("the earlier schema took a second row with one ID: the test does not start from it")
	}
	if _, err := pool.Exec(ctx, insert, "no-attempts", q.Name, q.Kind, 0); err != nil {
		t.Fatal(err)
	}
	err = (&outbox.Relay{Pool: pool, Backend: b, Logger: quiet()}).Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "older than this relay") || !strings.Contains(err.Error(), "Migrate") {
		t.Errorf("a relay on the earlier schema: %v, want an error naming Migrate", err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate over the earlier schema: %v", err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if id := enqueue(t, pool, q, 2, true, runtime.WithID("kept")); id != "kept" {
		t.Fatalf("enqueue returned %q", id)
	}
	if _, err := pool.Exec(ctx, insert, "no-attempts-2", q.Name, q.Kind, 0); err == nil || !strings.Contains(err.Error(), "queuey_outbox_max_attempts_rule") {
		t.Errorf("a row with max_attempts 0 after Migrate: %v, want the rule to refuse it", err)
	}
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: schemaPool(t, schema), Backend: b, Logger: quiet()})
	deadline := time.After(wait)
	for h.snapshot()["kept"] < 2 {
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("handled %v, want kept twice", h.snapshot())
		}
	}
	waitEmpty(t, pool)
	dead := deadRows(t, pool)
	if len(dead) != 1 || !strings.Contains(dead[0].Reason, "max_attempts 0") {
		t.Fatalf("dead rows %+v, want the row of max_attempts 0", dead)
	}
}
