package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/queuey/queuey/bench/e2e"
)

// riverDatabase is the database river's tables live in, created when
// missing so no other database is touched.
const riverDatabase = "queuey_bench"

// riverURL is the database URL: PEERS_PG_URL, or the local server as
// postgres (trusted), with plan_cache_mode=force_custom_plan. Without it,
// once the job table has been emptied, PostgreSQL switches river's fetch
// query to a cached generic plan that scans the whole table (seen on
// PostgreSQL 15 with autovacuum off, as here), and river falls to 100–200
// jobs/s: a property of that server's planner, not of river.
func riverURL() string {
	if u := os.Getenv("PEERS_PG_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/" + riverDatabase + "?plan_cache_mode=force_custom_plan"
}

var postgres = e2e.Meter{Servers: []int{5432}}

// riverArgs is the job: its JSON encoding, what river stores, is
// e2e.PayloadSize bytes.
type riverArgs struct {
	Body string `json:"body"`
}

func (riverArgs) Kind() string { return "queuey_peers" }

func newRiverArgs() riverArgs {
	return riverArgs{Body: strings.Repeat("x", e2e.PayloadSize-len(`{"body":""}`))}
}

type riverWorker struct {
	river.WorkerDefaults[riverArgs]
	handled *atomic.Int64
	warm    chan struct{}
	all     chan struct{}
	jobs    int64
}

func (w *riverWorker) Work(context.Context, *river.Job[riverArgs]) error {
	switch w.handled.Add(1) {
	case 1:
		close(w.warm)
	case w.jobs + 1:
		close(w.all)
	}
	return nil
}

// riverPeers are river tuned as its own benchmark (riverbench) tunes it,
// and river with its defaults; both insert with InsertMany in batches.
func riverPeers() []peer {
	return []peer{
		{"river", fmt.Sprintf("tuned as riverbench; InsertMany of %d", batch), func(ctx context.Context, jobs, _ int) (e2e.Span, error) {
			return runRiver(ctx, jobs, &river.Config{
				FetchCooldown:     2 * time.Millisecond,
				FetchPollInterval: 20 * time.Millisecond,
				Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2000}},
			})
		}},
		{"river", fmt.Sprintf("defaults, %d workers; InsertMany of %d", prefetch, batch), func(ctx context.Context, jobs, _ int) (e2e.Span, error) {
			return runRiver(ctx, jobs, &river.Config{
				Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: prefetch}},
			})
		}},
	}
}

func runRiver(ctx context.Context, jobs int, cfg *river.Config) (e2e.Span, error) {
	pool, err := riverPool(ctx)
	if err != nil {
		return e2e.Span{}, err
	}
	defer pool.Close()
	// A clean table for every run, as riverbench does, and as every other
	// peer gets a fresh queue.
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return e2e.Span{}, err
	}
	w := &riverWorker{handled: new(atomic.Int64), warm: make(chan struct{}), all: make(chan struct{}), jobs: int64(jobs)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	cfg.Workers = workers
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	client, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		return e2e.Span{}, err
	}
	if err := client.Start(ctx); err != nil {
		return e2e.Span{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = client.Stop(sctx)
	}()
	args := newRiverArgs()
	if _, err := client.Insert(ctx, args, nil); err != nil {
		return e2e.Span{}, err
	}
	select {
	case <-w.warm:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("warm-up job not worked: %w", ctx.Err())
	}
	params := make([]river.InsertManyParams, 0, batch)
	mark := postgres.Start()
	for i := range jobs {
		params = append(params, river.InsertManyParams{Args: args})
		if len(params) == batch || i == jobs-1 {
			if _, err := client.InsertMany(ctx, params); err != nil {
				return e2e.Span{}, err
			}
			params = params[:0]
		}
	}
	select {
	case <-w.all:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("worked %d of %d jobs: %w", w.handled.Load()-1, jobs, ctx.Err())
	}
	return mark.Stop(jobs), nil
}

// riverPool connects to riverURL, creating its database and river's
// tables first where they are missing.
func riverPool(ctx context.Context) (*pgxpool.Pool, error) {
	url := riverURL()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pgErr interface{ SQLState() string }
		if !errors.As(err, &pgErr) || pgErr.SQLState() != "3D000" || os.Getenv("PEERS_PG_URL") != "" {
			return nil, fmt.Errorf("postgres at %s: %w", url, err)
		}
		if err := createDatabase(ctx); err != nil {
			return nil, err
		}
		if pool, err = pgxpool.New(ctx, url); err != nil {
			return nil, err
		}
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	return pool, nil
}

func createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+riverDatabase)
	return err
}
