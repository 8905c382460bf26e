package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/internal/testenv/pgtest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// outboxSchema makes a schema of t's own, dropped when t ends, and
// returns the database URL that works in it, and its name.
func outboxSchema(t *testing.T) (url, schema string) {
	t.Helper()
	admin := pgtest.Require(t)
	var buf [6]byte
	_, _ = rand.Read(buf[:])
	schema = "queuey_cli_test_" + hex.EncodeToString(buf[:])
	if _, err := admin.Exec(ctxT(t), "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	url = pgtest.URL()
	if strings.Contains(url, "?") {
		url += "&search_path=" + schema
	} else {
		url += "?search_path=" + schema
	}
	return url, schema
}

// TestOutboxRelay creates the outbox with queuey outbox migrate, commits a
// job to it, and runs queuey outbox relay until the backend has the job.
func TestOutboxRelay(t *testing.T) {
	ctx := ctxT(t)
	url, schema := outboxSchema(t)

	b, q, _ := memoryQueue(t)
	env := memEnv(b)
	if r := runCLI(t, ctx, env, "outbox", "migrate", "--database-url", url); r.code != 0 || !strings.Contains(r.out, schema) {
		t.Fatalf("outbox migrate: exit %d, out %q, err %q", r.code, r.out, r.err)
	}

	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, job{To: "a@b.c"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan result, 1)
	go func() { done <- runCLI(t, rctx, env, "outbox", "relay", "--database-url", url) }()
	if !eventually.Wait(wait, func() bool {
		n, err := b.Ready(ctx, q.Name)
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}) {
		stop()
		t.Fatalf("the relay did not publish the job within %v", wait)
	}
	stop()
	select {
	case r := <-done:
		if r.code != 0 || !strings.Contains(r.out, "queuey outbox relay: from") || strings.Contains(r.out, ":queuey@") {
			t.Errorf("outbox relay: exit %d, out %q (password hidden?), err %q", r.code, r.out, r.err)
		}
	case <-time.After(wait):
		t.Fatalf("outbox relay did not stop within %v of its context", wait)
	}
}

// TestOutboxNeedsDatabase: without --database-url or QUEUEY_DATABASE_URL,
// the outbox commands are a usage error.
func TestOutboxNeedsDatabase(t *testing.T) {
	b, _, _ := memoryQueue(t)
	for _, cmd := range []string{"relay", "migrate"} {
		r := runCLI(t, ctxT(t), memEnv(b), "outbox", cmd)
		if r.code != 2 || !strings.Contains(r.err, "QUEUEY_DATABASE_URL") {
			t.Errorf("outbox %s: exit %d, err %q; want 2 naming QUEUEY_DATABASE_URL", cmd, r.code, r.err)
		}
	}
}
