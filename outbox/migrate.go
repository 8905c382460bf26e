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
// are missing, and brings an outbox made by an earlier version up to date:
// the columns the relay keeps its tries in, the CHECK rules (NOT VALID:
// rows already there are not checked), the job ID no longer unique, the
// trigger's function, two indexes. It is idempotent and safe to call from
// several processes at once; it deletes no row and writes nothing else to
// the database.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	// Without arguments, Exec sends the whole file as one simple query,
	// which PostgreSQL runs as one transaction.
	if _, err := pool.Exec(ctx, schema); err != nil {
		return fmt.Errorf("outbox: migrate: %w", err)
	}
	return nil
}
