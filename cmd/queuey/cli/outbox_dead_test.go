package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestOutboxStatusAndDeadRows runs queuey outbox status and outbox dead
// ls, retry and purge on a real database: the backlog and the dead rows
// are shown, in tables and in JSON; retry and purge ask for confirmation
// (refusing without a terminal or --yes), move or delete exactly the rows
// picked, and fail naming what matched nothing or was refused.
func TestOutboxStatusAndDeadRows(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	url, _ := outboxSchema(t)
	b, q, _ := memoryQueue(t)
	env := memEnv(b)
	if r := runCLI(t, ctx, env, "outbox", "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("outbox migrate: exit %d, err %q", r.code, r.err)
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
	// Dead rows as the relay leaves them: two of a queue declared since,
	// one that breaks the outbox's rules.
	for _, d := range []struct{ id, queue, reason string }{
		{"late-1", "late", "queue \"late\" does not exist"},
		{"late-2", "late", "queue \"late\" does not exist"},
		{"", "q", "id: a job ID must not be empty"},
	} {
		if _, err := pool.Exec(ctx, `INSERT INTO queuey_outbox_dead (seq, id, queue, kind, priority, max_attempts, payload, enqueued_at, reason)
			VALUES ((SELECT coalesce(max(seq), 100) + 1 FROM queuey_outbox_dead), $1, $2, 'cli_test.job', 0, 5, '\x80', now(), $3)`, d.id, d.queue, d.reason); err != nil {
			t.Fatal(err)
		}
	}

	r := runCLI(t, ctx, env, "outbox", "status", "--database-url", url)
	if r.code != 0 || !strings.Contains(r.out, "1 pending (0 retrying)") || !strings.Contains(r.out, "3 dead") || !strings.Contains(r.out, "late") {
		t.Fatalf("outbox status: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
	r = runCLI(t, ctx, env, "--json", "outbox", "status", "--database-url", url)
	var st admin.OutboxStats
	if err := json.Unmarshal([]byte(r.out), &st); r.code != 0 || err != nil || st.Pending != 1 || st.Dead != 3 || len(st.Queues) != 2 {
		t.Fatalf("outbox status --json: exit %d, %+v (%v), out %q", r.code, st, err, r.out)
	}

	r = runCLI(t, ctx, env, "outbox", "dead", "ls", "--database-url", url)
	if r.code != 0 || !strings.Contains(r.out, "late-1") || !strings.Contains(r.out, "does not exist") || !strings.Contains(r.out, "3 of 3 dead rows") {
		t.Fatalf("outbox dead ls: exit %d, out %q, err %q", r.code, r.out, r.err)
	}

	for _, args := range [][]string{{"--all", "--queue", "late"}, {}, {"--id", "x", "--all"}} {
		r = runCLI(t, ctx, env, append([]string{"outbox", "dead", "retry", "--database-url", url, "--yes"}, args...)...)
		if r.code != 2 {
			t.Errorf("outbox dead retry %v: exit %d, want 2 (usage); err %q", args, r.code, r.err)
		}
	}
	r = runCLI(t, ctx, env, "outbox", "dead", "retry", "--database-url", url, "--queue", "late")
	if r.code != 2 || !strings.Contains(r.err, "--yes") {
		t.Fatalf("outbox dead retry without a terminal or --yes: exit %d, err %q; want 2 naming --yes", r.code, r.err)
	}
	if _, dead := counts(t, pool); dead != 3 {
		t.Fatalf("%d dead rows after a refused retry, want 3", dead)
	}

	r = runCLI(t, ctx, env, "--json", "outbox", "dead", "retry", "--database-url", url, "--queue", "late", "--yes")
	var res outbox.DeadResult
	if err := json.Unmarshal([]byte(r.out), &res); r.code != 0 || err != nil || len(res.Done) != 2 || len(res.Refused) != 0 {
		t.Fatalf("outbox dead retry --queue late: exit %d, %+v (%v), out %q, err %q", r.code, res, err, r.out, r.err)
	}
	if pending, dead := counts(t, pool); pending != 3 || dead != 1 {
		t.Fatalf("after retry: %d pending, %d dead; want 3 and 1", pending, dead)
	}

	r = runCLI(t, ctx, env, "outbox", "dead", "retry", "--database-url", url, "--all", "--yes")
	if r.code != 1 || !strings.Contains(r.out, "refused row") || !strings.Contains(r.err, "purge") {
		t.Fatalf("outbox dead retry of a row the rules refuse: exit %d, out %q, err %q; want 1 naming purge", r.code, r.out, r.err)
	}
	r = runCLI(t, ctx, env, "outbox", "dead", "retry", "--database-url", url, "--id", "no-such-id", "--yes")
	if r.code != 1 || !strings.Contains(r.err, "no-such-id") {
		t.Fatalf("outbox dead retry --id no-such-id: exit %d, err %q; want 1 naming it", r.code, r.err)
	}
	r = runCLI(t, ctx, env, "outbox", "dead", "purge", "--database-url", url, "--all", "--yes")
	if r.code != 0 || !strings.Contains(r.out, "deleted 1 dead row") {
		t.Fatalf("outbox dead purge --all: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
	if pending, dead := counts(t, pool); pending != 3 || dead != 0 {
		t.Fatalf("after purge: %d pending, %d dead; want 3 and 0", pending, dead)
	}
	r = runCLI(t, ctx, env, "outbox", "dead", "ls", "--database-url", url)
	if r.code != 0 || !strings.Contains(r.out, "no dead rows") {
		t.Fatalf("outbox dead ls of none: exit %d, out %q", r.code, r.out)
	}
}

// counts returns the rows of the outbox and of its dead table.
func counts(t *testing.T, pool *pgxpool.Pool) (pending, dead int) {
	t.Helper()
	if err := pool.QueryRow(ctxT(t), "SELECT (SELECT count(*) FROM queuey_outbox), (SELECT count(*) FROM queuey_outbox_dead)").Scan(&pending, &dead); err != nil {
		t.Fatal(err)
	}
	return pending, dead
}

// TestDashboardOutboxPanel: queuey dashboard --database-url shows the
// outbox's backlog and dead rows on the overview.
func TestDashboardOutboxPanel(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	url, _ := outboxSchema(t)
	b, q, _ := memoryQueue(t)
	env := memEnv(b)
	if r := runCLI(t, ctx, env, "outbox", "migrate", "--database-url", url); r.code != 0 {
		t.Fatalf("outbox migrate: exit %d, err %q", r.code, r.err)
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
	base, stop := startDashboard(t, env, "dashboard", "--addr", "127.0.0.1:0", "--database-url", url)
	defer stop()
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `id="outbox"`) || !strings.Contains(string(body), "1 pending (0 retrying)") || !strings.Contains(string(body), `data-outbox-queue="q"`) {
		t.Fatalf("GET / = %d, want the outbox panel with the pending job of q:\n%s", resp.StatusCode, body)
	}
}
