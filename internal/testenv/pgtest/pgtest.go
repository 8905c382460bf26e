// Package pgtest gates tests and benchmarks that need a PostgreSQL: they
// read QUEUEY_DATABASE_URL (default
// postgres://queuey:queuey@127.0.0.1:5432/queuey) and skip when no
// PostgreSQL answers there, except when CI or QUEUEY_REQUIRE_BROKER is
// set: then they fail.
package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultURL is the database tests use when QUEUEY_DATABASE_URL is unset;
// scripts/postgres.sh (make postgres) makes its role and database.
const DefaultURL = "postgres://queuey:queuey@127.0.0.1:5432/queuey"

// URL returns QUEUEY_DATABASE_URL, or DefaultURL.
func URL() string {
	if u := os.Getenv("QUEUEY_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Require returns a pool on the database at URL when a PostgreSQL answers
// there, closed when tb ends. Otherwise it skips tb, or fails it when CI or
// QUEUEY_REQUIRE_BROKER is set.
func Require(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := URL()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatalf("QUEUEY_DATABASE_URL=%q: %v", url, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		if err = pool.Ping(ctx); err == nil {
			tb.Cleanup(pool.Close)
			return pool
		}
		pool.Close()
	}
	msg := "no PostgreSQL answers at " + cfg.ConnConfig.Host + ": " + err.Error() + " (is PostgreSQL running? make postgres starts one and creates the role and database)"
	if os.Getenv("CI") != "" || os.Getenv("QUEUEY_REQUIRE_BROKER") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return nil
}
