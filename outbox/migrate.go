package outbox

import (
	"context"
	_ "embed" // the schema
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed schema.sql
var schema string

// Migrate creates the outbox's tables and trigger (schema.sql) where they
// are missing. It is idempotent and safe to call from several processes at
// once; it changes nothing that exists already and writes nothing else to
// the database.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	// Without arguments, Exec sends the whole file as one simple query,
	// which PostgreSQL runs as one transaction.
	if _, err := pool.Exec(ctx, schema); err != nil {
		return fmt.Errorf("outbox: migrate: %w", err)
	}
	return nil
}
