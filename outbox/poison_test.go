package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// poison is a row no producer of this package writes, but another program
// may (or one did, before the schema's rules): set is the SQL that turns a
// good row into it, reason a part of the reason it is moved aside with.
type poison struct {
	name, set, reason string
}

// poisons are the rows the relay must move aside at once.
var poisons = []poison{
	{"id_300_bytes", "id = repeat('i', 300)", "300 bytes, over 255"},
	{"id_empty", "id = ''", "must not be empty"},
	{"max_attempts_0", "max_attempts = 0", "max_attempts 0"},
	{"max_attempts_over_limit", "max_attempts = 5000", "max_attempts 5000"},
	{"due_at_infinity", "due_at = 'infinity'", "due_at is infinity"},
	{"due_at_too_far", "due_at = now() + interval '100 days'", "runtime.MaxDeferral"},
	{"enqueued_at_infinity", "enqueued_at = 'infinity'", "enqueued_at is infinity"},
	{"enqueued_at_minus_infinity", "enqueued_at = '-infinity'", "enqueued_at is -infinity"},
	{"enqueued_at_beyond_wire", "enqueued_at = '3000-01-01'", "enqueued_at 3000"},
	{"priority_negative", "priority = -1", "priority -1"},
	{"priority_over_255", "priority = 300", "priority 300"},
	{"queue_invalid", "queue = 'no spaces allowed'", "want a queue name"},
	{"queue_300_bytes", "queue = repeat('q', 300)", "want a queue name"},
	{"kind_300_bytes", "kind = repeat('k', 300)", "at most 255 bytes"},
	{"headers_not_object", `headers = '[1, 2]'`, "want an object of strings"},
	{"headers_not_strings", `headers = '{"n": 1}'`, "want an object of strings"},
	{"headers_reserved", `headers = '{"queuey-tick": "2026-01-01T00:00:00Z"}'`, "is reserved"},
	{"header_name_300_bytes", `headers = jsonb_build_object(repeat('h', 300), 'v')`, "over 255"},
	{"id_null", "id = NULL", "id is NULL"},
	{"queue_null", "queue = NULL", "queue is NULL"},
	{"priority_null", "priority = NULL", "priority is NULL"},
	{"payload_null", "payload = NULL", "payload is NULL"},
	{"enqueued_at_null", "enqueued_at = NULL", "enqueued_at is NULL"},
	{"payload_over_broker_limit", `payload = payload || decode(repeat('00', 2000000), 'hex')`, "too large"},
}

// poisonMaxMessage is the broker's max message size as the poison tests'
// backend knows it, so that a job over it is cheap to make.
const poisonMaxMessage = 1 << 20

// dialPoison returns a RabbitMQ backend that takes messages of at most
// poisonMaxMessage bytes, closed when tb ends.
func dialPoison(tb testing.TB) *rabbitmq.Backend {
	tb.Helper()
	url := brokertest.Require(tb)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Logger: quiet(), MaxMessageSize: poisonMaxMessage})
	if err != nil {
		tb.Fatalf("Dial: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// dropRules drops the schema's CHECK and NOT NULL constraints from the
// outbox of pool, as a table made by another tool, or rows written before
// them, would be.
func dropRules(tb testing.TB, pool *pgxpool.Pool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, c := range []string{"id", "priority", "max_attempts", "enqueued_at", "due_at"} {
		if _, err := pool.Exec(ctx, "ALTER TABLE queuey_outbox DROP CONSTRAINT IF EXISTS queuey_outbox_"+c+"_rule"); err != nil {
			tb.Fatal(err)
		}
	}
	for _, c := range []string{"id", "queue", "kind", "priority", "max_attempts", "payload", "enqueued_at"} {
		if _, err := pool.Exec(ctx, "ALTER TABLE queuey_outbox ALTER COLUMN "+c+" DROP NOT NULL"); err != nil {
			tb.Fatal(err)
		}
	}
}

// insertPoison commits a row onto q that p.set makes poison, and returns
// its seq.
func insertPoison(tb testing.TB, pool *pgxpool.Pool, q runtime.QueueConfig, p poison) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var seq int64
	err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
		id := "poison-" + p.name
		if _, err := runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, ping{N: -1}, runtime.WithID(id)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "UPDATE queuey_outbox SET "+p.set+" WHERE id = $1 RETURNING seq", id).Scan(&seq)
	})
	if err != nil {
		tb.Fatalf("insert poison %s: %v", p.name, err)
	}
	return seq
}

// deadRow is a row of queuey_outbox_dead.
type deadRow struct {
	Seq    int64
	Reason string
}

// deadRows returns the rows of queuey_outbox_dead, by seq.
func deadRows(tb testing.TB, pool *pgxpool.Pool) []deadRow {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	rows, err := pool.Query(ctx, "SELECT seq, reason FROM queuey_outbox_dead ORDER BY seq")
	if err != nil {
		tb.Fatal(err)
	}
	dead, err := pgx.CollectRows(rows, pgx.RowToStructByPos[deadRow])
	if err != nil {
		tb.Fatal(err)
	}
	return dead
}

// runRelayUntilIdle starts a relay of pool to b and waits for the first
// time it finds nothing left, failing tb when that does not come within
// wait.
func runRelayUntilIdle(tb testing.TB, pool *pgxpool.Pool, b runtime.Backend) {
	tb.Helper()
	idle := make(chan struct{}, 1)
	r := &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()}
	outbox.SetHooks(r, nil, func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	brokertest.Run(tb, r)
	select {
	case <-idle:
	case <-time.After(wait):
		left, dead := rowsLeft(tb, pool)
		tb.Fatalf("the relay did not run out of rows within %v: %d left in the outbox, %d dead", wait, left, dead)
	}
}

// TestPoisonRows: each poison row, between two good ones, is moved to
// queuey_outbox_dead with a reason saying what is wrong before the relay
// first runs out of rows (so in the round that reads it, with no
// backoff), and the good rows around it are published.
func TestPoisonRows(t *testing.T) {
	b := dialPoison(t)
	for _, p := range poisons {
		t.Run(p.name, func(t *testing.T) {
			pool, _ := database(t)
			dropRules(t, pool)
			q := testQueue(t)
			declare(t, b, q)
			h := newHandled()
			brokertest.RunWorker(t, b, q, h.handler)

			before := enqueue(t, pool, q, 1, true)
			seq := insertPoison(t, pool, q, p)
			after := enqueue(t, pool, q, 2, true)
			runRelayUntilIdle(t, pool, b)

			if left, _ := rowsLeft(t, pool); left != 0 {
				t.Errorf("%d rows left in the outbox when the relay went idle, want 0", left)
			}
			dead := deadRows(t, pool)
			if len(dead) != 1 || dead[0].Seq != seq || !strings.Contains(dead[0].Reason, p.reason) {
				t.Fatalf("dead rows %+v, want row %d alone, with a reason containing %q", dead, seq, p.reason)
			}
			h.waitDistinct(t, 2)
			if got := h.snapshot(); got[before] != 1 || got[after] != 1 || len(got) != 2 {
				t.Errorf("handled %v, want %q and %q once each, and nothing else", got, before, after)
			}
		})
	}
}

// TestPoisonBatch: one batch of every poison row among good ones, read in
// one round: each poison row is moved aside with its own reason, and
// every good job is published.
func TestPoisonBatch(t *testing.T) {
	b := dialPoison(t)
	pool, _ := database(t)
	dropRules(t, pool)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	var good []string
	want := map[int64]string{}
	for i, p := range poisons {
		good = append(good, enqueue(t, pool, q, i, true))
		want[insertPoison(t, pool, q, p)] = p.reason
	}
	good = append(good, enqueue(t, pool, q, len(poisons), true))
	runRelayUntilIdle(t, pool, b)
	dead := deadRows(t, pool)
	if len(dead) != len(poisons) {
		t.Errorf("%d dead rows, want %d", len(dead), len(poisons))
	}
	for _, d := range dead {
		if r, ok := want[d.Seq]; !ok || !strings.Contains(d.Reason, r) {
			t.Errorf("dead row %d: reason %q, want one containing %q", d.Seq, d.Reason, r)
		}
	}
	h.waitDistinct(t, len(good))
	got := h.snapshot()
	for _, id := range good {
		if got[id] != 1 {
			t.Errorf("good job %q handled %d times, want once", id, got[id])
		}
	}
	if len(got) != len(good) {
		t.Errorf("handled %d distinct jobs, want %d: %v", len(got), len(good), fmt.Sprint(got))
	}
}
