package outbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/pgtest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// wait bounds every wait of a test.
const wait = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	goleak.VerifyTestMain(m)
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// ping is the job of the tests' queues.
type ping struct {
	N int
}

// testQueue returns the config of a queue of pings with a name of tb's own.
func testQueue(tb testing.TB) runtime.QueueConfig {
	return runtime.QueueConfig{Name: unique(tb, "queuey-outbox-test"), Kind: "outbox_test.ping", Prefetch: 200}
}

// unique returns prefix, tb's name and a random suffix, joined by dots.
func unique(tb testing.TB, prefix string) string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := strings.NewReplacer("/", ".", " ", "_").Replace(tb.Name())
	return prefix + "." + name + "." + hex.EncodeToString(buf[:])
}

// database returns a pool on a schema of tb's own, with the outbox
// migrated into it and dropped when tb ends, and the schema's name.
func database(tb testing.TB) (*pgxpool.Pool, string) {
	tb.Helper()
	admin := pgtest.Require(tb)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var buf [6]byte
	_, _ = rand.Read(buf[:])
	schema := "queuey_test_" + hex.EncodeToString(buf[:])
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema: %v", err)
		}
	})
	pool := schemaPool(tb, schema)
	if err := outbox.Migrate(ctx, pool); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	return pool, schema
}

// schemaPool returns a pool whose connections work in schema.
func schemaPool(tb testing.TB, schema string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// dial returns a RabbitMQ backend closed when tb ends.
func dial(tb testing.TB) *rabbitmq.Backend {
	tb.Helper()
	url := brokertest.Require(tb)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: quiet()})
	if err != nil {
		tb.Fatalf("Dial: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// declare declares q on b, and deletes it and its companions on the broker
// when tb ends.
func declare(tb testing.TB, b runtime.Backend, q runtime.QueueConfig) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := b.Declare(ctx, q); err != nil {
		tb.Fatalf("Declare %q: %v", q.Name, err)
	}
	if _, ok := b.(*rabbitmq.Backend); ok {
		tb.Cleanup(func() { brokertest.DeleteQueues(brokertest.URL(), q.Name, q.Name+".dead") })
	}
}

// handled records the jobs a worker handled, by ID.
type handled struct {
	mu    sync.Mutex
	count map[string]int
	at    map[string]time.Time
	total int
	more  chan struct{}
}

func newHandled() *handled {
	return &handled{count: map[string]int{}, at: map[string]time.Time{}, more: make(chan struct{}, 1)}
}

// handler records each job it runs.
func (h *handled) handler(ctx context.Context, _ ping) error {
	info, _ := runtime.InfoFromContext(ctx)
	h.mu.Lock()
	h.count[info.ID]++
	if _, ok := h.at[info.ID]; !ok {
		h.at[info.ID] = time.Now()
	}
	h.total++
	h.mu.Unlock()
	select {
	case h.more <- struct{}{}:
	default:
	}
	return nil
}

// waitDistinct waits until n distinct jobs were handled, failing tb after
// wait.
func (h *handled) waitDistinct(tb testing.TB, n int) {
	tb.Helper()
	deadline := time.After(wait)
	for {
		h.mu.Lock()
		got := len(h.count)
		h.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-h.more:
		case <-deadline:
			tb.Fatalf("%d distinct jobs handled after %v, want %d", got, wait, n)
		}
	}
}

// snapshot returns a copy of the counts by ID.
func (h *handled) snapshot() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(map[string]int, len(h.count))
	for id, n := range h.count {
		c[id] = n
	}
	return c
}

// enqueue enqueues one ping onto q in a transaction of pool, committed or
// rolled back, and returns its ID.
func enqueue(tb testing.TB, pool *pgxpool.Pool, q runtime.QueueConfig, n int, commit bool, opts ...runtime.EnqueueOption) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var id string
	err := inTx(ctx, pool, commit, func(tx pgx.Tx) error {
		var err error
		id, err = runtime.Enqueue(ctx, outbox.Producer(outbox.PgxTx(tx)), q, ping{N: n}, opts...)
		return err
	})
	if err != nil {
		tb.Fatalf("enqueue: %v", err)
	}
	return id
}

// inTx runs f in a transaction of pool, then commits it or rolls it back.
func inTx(ctx context.Context, pool *pgxpool.Pool, commit bool, f func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := f(tx); err != nil {
		return err
	}
	if commit {
		return tx.Commit(ctx)
	}
	return tx.Rollback(ctx)
}

// rowsLeft returns how many rows the outbox and its dead table hold.
func rowsLeft(tb testing.TB, pool *pgxpool.Pool) (outboxRows, dead int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM queuey_outbox), (SELECT count(*) FROM queuey_outbox_dead)").Scan(&outboxRows, &dead); err != nil {
		tb.Fatalf("count rows: %v", err)
	}
	return outboxRows, dead
}
