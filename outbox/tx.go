package outbox

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
)

// Tx is the application's database transaction that jobs are inserted in.
// PgxTx and SQLTx make one of a pgx or a database/sql transaction; another
// driver's transaction takes a few lines of the same shape. Exec runs sql,
// with PostgreSQL's $1, $2... placeholders, in the transaction.
type Tx interface {
	Exec(ctx context.Context, sql string, args ...any) error
}

// PgxTx returns tx, a pgx transaction (from pgx.Conn.Begin or
// pgxpool.Pool.Begin), as a Tx.
func PgxTx(tx pgx.Tx) Tx { return pgxTx{tx} }

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.Exec(ctx, sql, args...)
	return err
}

// SQLTx returns tx, a database/sql transaction on PostgreSQL (through
// pgx's stdlib driver or lib/pq), as a Tx.
func SQLTx(tx *sql.Tx) Tx { return sqlTx{tx} }

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, sql string, args ...any) error {
	_, err := t.tx.ExecContext(ctx, sql, args...)
	return err
}
