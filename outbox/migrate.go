package outbox

import (
	"context"
	_ "embed" // the schema
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed schema.sql
var schema string

// MigrateLockTimeout is how long Migrate waits for a lock on one of the
// outbox's tables before it gives up (schema.sql's lock_timeout).
const MigrateLockTimeout = "3s"

// ErrMigrateLocked is the error Migrate wraps when a change to the
// outbox's tables waited MigrateLockTimeout for its lock: another
// transaction uses the table (one still open that inserted into the
// outbox, say). Nothing was changed; call Migrate again once it ends.
var ErrMigrateLocked = errors.New("outbox: migrate: lock not granted within " + MigrateLockTimeout)

// Migrate creates the outbox's tables and trigger (schema.sql) where they
// are missing, and brings an outbox made by an earlier version up to date:
// the columns the relay keeps its tries in, the CHECK rules (NOT VALID:
// rows already there are not checked), the job ID no longer unique, the
// trigger's function, two indexes. It runs in one transaction, deletes no
// row and writes nothing else to the database; calls from several
// processes wait for each other on an advisory lock.
//
// What it locks: on tables already up to date it reads the catalog only,
// takes no lock on the outbox's tables or indexes, and returns without
// waiting for the transactions that use them (it waits only for another
// Migrate, on the advisory lock). Only a change that is needed takes its
// lock: ACCESS EXCLUSIVE on queuey_outbox to add a column or a rule or
// drop the old unique constraint, SHARE to build a missing index, SHARE
// ROW EXCLUSIVE to create the trigger. Such a lock waits for every open
// transaction that wrote to the table (and, for ACCESS EXCLUSIVE, read
// it), and while it waits, transactions that insert into the outbox wait
// behind it: so each waits at most MigrateLockTimeout, then Migrate fails
// with ErrMigrateLocked, naming the statement, having changed nothing.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	// Without arguments, Exec sends the whole file as one simple query,
	// which PostgreSQL runs as one transaction.
	_, err := pool.Exec(ctx, schema)
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		what, _, _ := strings.Cut(pgErr.Where, "\n")
		if what == "" {
			what = "a statement of schema.sql"
		}
		return fmt.Errorf("%w, waiting to run %s: another transaction uses the outbox's table (one still open that inserted into it, say); nothing was changed: retry once it ends: %w",
			ErrMigrateLocked, what, err)
	}
	return fmt.Errorf("outbox: migrate: %w", err)
}
