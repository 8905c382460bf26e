package outbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestFailAloneNotMovedAside: a job whose publish alone fails for a
// reason that may pass (its queue full, at reject-publish) while the
// relay publishes others is tried again for longer than
// MissingQueueGrace, not moved aside, holds back no other job, and is
// published once its queue has room.
func TestFailAloneNotMovedAside(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	other := testQueue(t)
	declare(t, b, other)
	hOther := newHandled()
	brokertest.RunWorker(t, b, other, hOther.handler)
	full := testQueue(t)
	full.Name += ".full"
	declare(t, b, full)
	brokerPolicy(t, full.Name, map[string]any{"max-length": 1, "overflow": "reject-publish"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	filler, err := runtime.Enqueue(ctx, runtime.NewProducerUndeclared(b), full, ping{N: -1})
	if err != nil {
		t.Fatalf("fill %q: %v", full.Name, err)
	}
	id := enqueue(t, pool, full, 1, true)
	const grace = time.Second
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet(), MissingQueueGrace: grace})

	// Jobs of another queue go meanwhile, each in a round where the
	// full queue's job may fail alone, until it has failed for three
	// times the grace, three times or more.
	deadline := time.After(2 * wait)
	for i := 0; ; i++ {
		oid := enqueue(t, pool, other, i, true)
		hOther.waitDistinct(t, i+1)
		if hOther.snapshot()[oid] != 1 {
			t.Fatalf("job %q of another queue not handled", oid)
		}
		var attempts, dead int
		var failing float64
		var lastError string
		err := pool.QueryRow(ctx, `SELECT coalesce(max(attempts), 0), coalesce(max(extract(epoch FROM clock_timestamp() - failing_since)), 0)::float8,
			coalesce(max(last_error), ''), (SELECT count(*) FROM queuey_outbox_dead) FROM queuey_outbox WHERE id = $1`, id).Scan(&attempts, &failing, &lastError, &dead)
		if err != nil {
			t.Fatal(err)
		}
		if dead != 0 {
			t.Fatalf("job moved aside while it failed alone: %+v", deadRows(t, pool))
		}
		if attempts >= 3 && failing >= 3*grace.Seconds() {
			if !strings.Contains(lastError, "nack") {
				t.Fatalf("last error %q, want the broker's nack", lastError)
			}
			break
		}
		select {
		case <-deadline:
			t.Fatalf("job %q: %d failed tries over %.1fs after %v, want 3 over %v", id, attempts, failing, 2*wait, 3*grace)
		default:
		}
	}

	hFull := newHandled()
	brokertest.RunWorker(t, b, full, hFull.handler)
	hFull.waitDistinct(t, 2)
	if got := hFull.snapshot(); got[id] != 1 || got[filler] != 1 {
		t.Fatalf("handled %v, want %q and the filler %q", got, id, filler)
	}
	waitEmpty(t, pool)
	if _, dead := rowsLeft(t, pool); dead != 0 {
		t.Fatalf("%d rows moved aside, want none", dead)
	}
}

// brokerPolicy applies a policy of definition to queue alone (vhost "/"),
// at a priority above any other, through the broker's management API
// (QUEUEY_MANAGEMENT_URL, else the broker's host on port 15672 with the
// AMQP URL's credentials), and removes it when t ends. It returns once
// the queue shows the policy; it skips t when the API does not answer.
func brokerPolicy(t *testing.T, queue string, definition map[string]any) {
	t.Helper()
	base := os.Getenv("QUEUEY_MANAGEMENT_URL")
	if base == "" {
		u, err := url.Parse(brokertest.URL())
		if err != nil {
			t.Fatal(err)
		}
		base = (&url.URL{Scheme: "http", User: u.User, Host: net.JoinHostPort(u.Hostname(), "15672"), Path: "/"}).String()
	}
	do := func(method, path string, body any) ([]byte, error) {
		var in bytes.Buffer
		if body != nil {
			if err := json.NewEncoder(&in).Encode(body); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(base, "/")+"/"+path, &in)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		// No idle connection outlives the request, for goleak.
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode >= 300 {
			err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, out)
		}
		return out, err
	}
	if _, err := do(http.MethodGet, "api/overview", nil); err != nil {
		t.Skipf("this test sets a broker policy through the management API, which does not answer: %v", err)
	}
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-test-outbox-" + hex.EncodeToString(buf[:])
	policy := "api/policies/" + url.PathEscape("/") + "/" + url.PathEscape(name)
	t.Cleanup(func() {
		if _, err := do(http.MethodDelete, policy, nil); err != nil {
			t.Errorf("remove policy %s: %v", name, err)
		}
	})
	if _, err := do(http.MethodPut, policy, map[string]any{
		"pattern": "^" + regexp.QuoteMeta(queue) + "$", "apply-to": "queues", "priority": 1000, "definition": definition,
	}); err != nil {
		t.Fatalf("set policy: %v", err)
	}
	var q struct {
		Policy string `json:"policy"`
	}
	if !eventually.Wait(wait, func() bool {
		body, err := do(http.MethodGet, "api/queues/"+url.PathEscape("/")+"/"+url.PathEscape(queue), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &q); err != nil {
			t.Fatal(err)
		}
		return q.Policy == name
	}) {
		t.Fatalf("queue %q shows policy %q after %v, want %q", queue, q.Policy, wait, name)
	}
}

// TestRoundFailsAfterPublish: a round whose transaction fails after its
// publishes (here: the row it must move aside cannot be) rolls back whole,
// and the jobs it published are published again, with their IDs, until a
// round commits: at least once.
func TestRoundFailsAfterPublish(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	ctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	if _, err := pool.Exec(ctx, `CREATE FUNCTION refuse_dead() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'the test refuses dead rows'; END $$;
CREATE TRIGGER refuse_dead BEFORE INSERT ON queuey_outbox_dead FOR EACH ROW EXECUTE FUNCTION refuse_dead()`); err != nil {
		t.Fatal(err)
	}
	var id string
	err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
		var err error
		if id, err = runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, ping{N: 1}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, headers, payload, enqueued_at)
			VALUES ('reserved-header', $1, $2, 0, 5, '{"queuey-tick": "2026-01-01T00:00:00Z"}', '\x81a14e01', now())`, q.Name, q.Kind)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()})
	deadline := time.After(wait)
	for h.snapshot()[id] < 2 {
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("handled %v after %v, want job %q twice: published, rolled back, published again", h.snapshot(), wait, id)
		}
	}
	if left, _ := rowsLeft(t, pool); left != 2 {
		t.Fatalf("%d rows in the outbox while no round could commit, want both", left)
	}
	if _, err := pool.Exec(ctx, "DROP TRIGGER refuse_dead ON queuey_outbox_dead"); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, pool)
	if dead := deadRows(t, pool); len(dead) != 1 || !strings.Contains(dead[0].Reason, "reserved") {
		t.Fatalf("dead rows %+v, want the row with a reserved header", dead)
	}
	for got, n := range h.snapshot() {
		if got != id || n < 2 {
			t.Fatalf("handled %v, want only job %q, twice or more", h.snapshot(), id)
		}
	}
}
