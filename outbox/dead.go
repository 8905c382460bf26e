package outbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DeadRow is a row of queuey_outbox_dead: a job the relay could not
// publish, and why.
type DeadRow struct {
	// Seq is the row's place in the outbox when it was moved aside; it
	// names the row (a job's ID is a label that rows may share).
	Seq    int64     `json:"seq"`
	ID     string    `json:"id"`
	Queue  string    `json:"queue"`
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	DeadAt time.Time `json:"dead_at"`
}

// DeadSelector picks dead rows: every one (All), those of one queue
// (Queue), or those with one of IDs; exactly one of the three.
type DeadSelector struct {
	All   bool
	Queue string
	IDs   []string
}

func (s DeadSelector) check() error {
	n := 0
	for _, set := range []bool{s.All, s.Queue != "", len(s.IDs) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("outbox: pick dead rows by exactly one of All, Queue and IDs")
	}
	return nil
}

// where is the condition on queuey_outbox_dead that s picks, over $1
// (the queue) and $2 (the IDs).
const where = `($1::text IS NULL AND $2::text[] IS NULL) OR queue = $1 OR id = ANY($2)`

func (s DeadSelector) args() []any {
	var queue, ids any
	if s.Queue != "" {
		queue = s.Queue
	}
	if len(s.IDs) > 0 {
		ids = s.IDs
	}
	return []any{queue, ids}
}

// ListDead returns up to limit dead rows that sel picks, oldest first
// (an empty selector picks every one), and how many it picks in all.
func ListDead(ctx context.Context, pool *pgxpool.Pool, sel DeadSelector, limit int) ([]DeadRow, int64, error) {
	args := append(sel.args(), limit)
	rows, err := pool.Query(ctx, `SELECT seq, id, queue, kind, reason, dead_at, count(*) OVER ()
FROM queuey_outbox_dead WHERE `+where+` ORDER BY dead_at, seq LIMIT $3`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("outbox: dead rows: %w", err)
	}
	defer rows.Close()
	var (
		list  []DeadRow
		total int64
	)
	for rows.Next() {
		var d DeadRow
		if err := rows.Scan(&d.Seq, &d.ID, &d.Queue, &d.Kind, &d.Reason, &d.DeadAt, &total); err != nil {
			return nil, 0, fmt.Errorf("outbox: dead rows: %w", err)
		}
		list = append(list, d)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("outbox: dead rows: %w", err)
	}
	if len(list) == 0 && limit > 0 {
		return nil, 0, nil
	}
	if limit <= 0 {
		err = pool.QueryRow(ctx, `SELECT count(*) FROM queuey_outbox_dead WHERE `+where, sel.args()...).Scan(&total)
	}
	return list, total, err
}

// DeadResult is what RetryDead or PurgeDead did.
type DeadResult struct {
	// Done is the rows put back in the outbox, or deleted.
	Done []DeadRow `json:"done"`
	// Refused is the rows RetryDead left where they are: the outbox's
	// rules refuse them (an ID of 300 bytes, say), so the relay would
	// never publish them. Reason says which rule.
	Refused []DeadRow `json:"refused"`
	// NotFound is the IDs asked for that no dead row has.
	NotFound []string `json:"not_found"`
}

// moveBack moves the dead row $1 back to the outbox, as a new row (at the
// end of the line, tried as if new); a delayed job whose due time has
// passed is published at once.
const moveBack = `WITH d AS (DELETE FROM queuey_outbox_dead WHERE seq = $1 RETURNING *)
INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange)
SELECT id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange FROM d`

// RetryDead puts the dead rows sel picks back in the outbox, for the
// relay to publish: after their queue was declared, say. Each row moves
// alone, in one transaction for all: a row the outbox's rules refuse
// stays, in Refused.
func RetryDead(ctx context.Context, pool *pgxpool.Pool, sel DeadSelector) (DeadResult, error) {
	return onDead(ctx, pool, sel, moveBack)
}

// PurgeDead deletes the dead rows sel picks, for good.
func PurgeDead(ctx context.Context, pool *pgxpool.Pool, sel DeadSelector) (DeadResult, error) {
	return onDead(ctx, pool, sel, "DELETE FROM queuey_outbox_dead WHERE seq = $1")
}

// onDead runs sql ($1 a seq) on each dead row sel picks, in one
// transaction, each in a savepoint of its own.
func onDead(ctx context.Context, pool *pgxpool.Pool, sel DeadSelector, sql string) (DeadResult, error) {
	if err := sel.check(); err != nil {
		return DeadResult{}, err
	}
	res := DeadResult{Done: []DeadRow{}, Refused: []DeadRow{}, NotFound: []string{}}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seq, id, queue, kind, reason, dead_at FROM queuey_outbox_dead WHERE `+where+` ORDER BY dead_at, seq FOR UPDATE`, sel.args()...)
		if err != nil {
			return err
		}
		picked, err := pgx.CollectRows(rows, pgx.RowToStructByPos[DeadRow])
		if err != nil {
			return err
		}
		for _, d := range picked {
			err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
				_, err := sp.Exec(ctx, sql, d.Seq)
				return err
			})
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				d.Reason = err.Error()
				res.Refused = append(res.Refused, d)
				continue
			}
			res.Done = append(res.Done, d)
		}
		for _, id := range sel.IDs {
			if !slices.ContainsFunc(picked, func(d DeadRow) bool { return d.ID == id }) && !slices.Contains(res.NotFound, id) {
				res.NotFound = append(res.NotFound, id)
			}
		}
		return nil
	})
	if err != nil {
		return DeadResult{}, fmt.Errorf("outbox: dead rows: %w", err)
	}
	return res, nil
}
