package outbox_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// migrateAsync runs Migrate and returns the channel its error comes on.
func migrateAsync(ctx context.Context, pool *pgxpool.Pool) <-chan error {
	done := make(chan error, 1)
	go func() { done <- outbox.Migrate(ctx, pool) }()
	return done
}

// awaitMigrate waits for Migrate's return on done, failing t after wait;
// then it ends tx, so that a Migrate that waits for it returns, and waits
// for that.
func awaitMigrate(t *testing.T, done <-chan error, tx pgx.Tx) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Errorf("Migrate has not returned after %v while another transaction inserts into the outbox", wait)
		_ = tx.Rollback(context.Background())
		select {
		case err := <-done:
			t.Fatalf("Migrate returned %v once the transaction ended", err)
		case <-time.After(wait):
			t.Fatal("Migrate has not returned either after the transaction ended")
		}
		return nil
	}
}

// TestMigrateUpToDateUnderOpenInsert: Migrate on tables already up to
// date returns while a transaction that inserted into the outbox is still
// open, and that transaction then commits and its job is relayed.
func TestMigrateUpToDateUnderOpenInsert(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	id, err := runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second: after a first that changed nothing either
		if err := awaitMigrate(t, migrateAsync(ctx, pool), tx); err != nil {
			t.Fatalf("Migrate %d on an up-to-date outbox, with an insert not yet committed: %v", i+1, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit after Migrate: %v", err)
	}
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()})
	h.waitDistinct(t, 1)
	if got := h.snapshot(); got[id] != 1 {
		t.Fatalf("handled %v, want job %q", got, id)
	}
}

// TestMigrateOldUnderOpenInsert: Migrate that must change the outbox's
// table while a transaction that inserted into it is open gives up with
// ErrMigrateLocked, naming the statement, and changes nothing; once the
// transaction commits it succeeds. Rows already there keep their age:
// the stats take it from enqueued_at, not from the migration.
func TestMigrateOldUnderOpenInsert(t *testing.T) {
	pool, _ := database(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
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
	insert := `INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, payload, enqueued_at) VALUES ($1, 'q', 'k', 0, 5, '\x81a14e01', $2)`
	if _, err := pool.Exec(ctx, insert, "an-hour-old", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, insert, "open", time.Now()); err != nil {
		t.Fatal(err)
	}

	err = awaitMigrate(t, migrateAsync(ctx, pool), tx)
	if !errors.Is(err, outbox.ErrMigrateLocked) || !strings.Contains(err.Error(), "ALTER TABLE queuey_outbox") || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("Migrate of an old outbox with an insert not yet committed: %v, want ErrMigrateLocked naming the ALTER TABLE and saying to retry", err)
	}
	var cols int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'queuey_outbox' AND column_name IN ('inserted_at', 'attempts')").Scan(&cols); err != nil {
		t.Fatal(err)
	}
	if cols != 0 {
		t.Fatalf("%d new columns after a Migrate that failed, want none", cols)
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit after Migrate gave up: %v", err)
	}
	if err := outbox.Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate once the transaction committed: %v", err)
	}
	var body string
	if err := pool.QueryRow(ctx, "SELECT prosrc FROM pg_proc WHERE oid = 'queuey_outbox_notify()'::regprocedure").Scan(&body); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "pg_advisory_unlock") {
		t.Fatalf("the trigger's function after Migrate:\n%s\nwant this version's, which lets go of \"busy\" at once", body)
	}
	st, err := outbox.ReadStats(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 2 || st.OldestAge < 59*time.Minute || st.OldestAge > 2*time.Hour {
		t.Fatalf("stats %+v after Migrate: want 2 pending, the oldest an hour old (its enqueued_at)", st)
	}
}

// TestMigrateLockTimeoutInSchema: the timeout Migrate's errors name is the
// one its schema sets.
func TestMigrateLockTimeoutInSchema(t *testing.T) {
	if want := "SET LOCAL lock_timeout = '" + outbox.MigrateLockTimeout + "'"; !strings.Contains(outbox.Schema, want) {
		t.Fatalf("schema.sql lacks %q", want)
	}
}

// TestMigrateUpToDateLocksNoTable: the schema applied to an up-to-date
// outbox, in a transaction left open, holds no lock of any mode on the
// outbox's tables, their indexes or its function's table.
func TestMigrateUpToDateLocksNoTable(t *testing.T) {
	pool, _ := database(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, outbox.Schema); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `SELECT c.relname || ' ' || l.mode FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
		WHERE l.pid = pg_backend_pid() AND c.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(locks) != 0 {
		t.Fatalf("the schema on an up-to-date outbox holds %v, want no lock on its tables", locks)
	}
}
