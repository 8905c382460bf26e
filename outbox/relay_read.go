package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuey/queuey/runtime"
)

// row is one outbox row, as the relay reads it.
type row struct {
	seq     int64
	env     *runtime.Envelope
	delay   time.Duration
	wait    runtime.QueueConfig // for a delayed job
	invalid string              // why the row cannot be a job, if it cannot

	attempts   int           // tries the backend refused for now, before this one
	failingFor time.Duration // since the first of them
}

// rowColumns are what the relay reads of a row, each in a form that
// reads for any value the column can hold, so that no row can fail the
// read of the others: the payload only up to $2 bytes (its length
// always), the delay left on the database's clock as microseconds, -1
// for a due_at of infinity, and how long the row has been failing, in
// seconds.
const rowColumns = `seq, id, queue, kind, priority, max_attempts, headers,
	CASE WHEN octet_length(payload) <= $2 THEN payload END, octet_length(payload), enqueued_at,
	CASE WHEN due_at IS NULL OR due_at = '-infinity' THEN 0
		WHEN due_at = 'infinity' THEN -1
		ELSE least(greatest(ceil((extract(epoch FROM due_at) - extract(epoch FROM clock_timestamp())) * 1000000), 0), 1e15)::bigint END,
	queue_type, delay_mode, delay_exchange, attempts,
	CASE WHEN failing_since IS NULL THEN 0
		WHEN isfinite(failing_since) THEN (extract(epoch FROM clock_timestamp()) - extract(epoch FROM failing_since))::float8
		ELSE 1e12 END`

// selectReady takes the oldest committed rows not yet tried that no other
// relay holds; selectRetries, the rows set apart for another try that are
// due, except those in $3.
const (
	selectReady = `SELECT ` + rowColumns + `
FROM queuey_outbox WHERE retry_at IS NULL ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`
	selectRetries = `SELECT ` + rowColumns + `
FROM queuey_outbox WHERE retry_at <= clock_timestamp() AND seq <> ALL($3::bigint[]) ORDER BY retry_at LIMIT $1 FOR UPDATE SKIP LOCKED`
)

// read takes a batch of rows in tx: due retries up to a quarter of the
// batch, then rows not yet tried, then more due retries if there is
// room. Rows set apart for another try thus neither crowd out new rows
// nor wait for them to run out.
func (r *relayRun) read(ctx context.Context, tx pgx.Tx) ([]row, error) {
	quarter := r.batch / 4
	rows, err := r.query(ctx, tx, nil, selectRetries, quarter, runtime.MaxJobSize, []int64{})
	if err != nil {
		return nil, err
	}
	retries := len(rows)
	if rows, err = r.query(ctx, tx, rows, selectReady, r.batch-len(rows), runtime.MaxJobSize); err != nil {
		return nil, err
	}
	// More due retries, when there is room and the first look may have
	// left some.
	if room := r.batch - len(rows); room > 0 && retries == quarter {
		taken := make([]int64, len(rows))
		for i, rw := range rows {
			taken[i] = rw.seq
		}
		return r.query(ctx, tx, rows, selectRetries, room, runtime.MaxJobSize, taken)
	}
	return rows, nil
}

// query appends to rows those that sql, with args ($1 a limit), takes.
func (r *relayRun) query(ctx context.Context, tx pgx.Tx, rows []row, sql string, args ...any) ([]row, error) {
	if args[0].(int) <= 0 {
		return rows, nil
	}
	res, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("select rows: %w", err)
	}
	defer res.Close()
	m := tx.Conn().TypeMap()
	for res.Next() {
		rows = append(rows, decodeRow(m, res.FieldDescriptions(), res.RawValues()))
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return rows, nil
}

// decodeRow makes a row of the raw values of rowColumns, one column at a
// time: a value that does not decode makes its row invalid, not the read.
func decodeRow(m *pgtype.Map, fds []pgconn.FieldDescription, raw [][]byte) row {
	var (
		seq                                        int64
		id, queue, kind, queueType, mode, exchange pgtype.Text
		priority                                   pgtype.Int2
		maxAttempts, size, attempts                pgtype.Int4
		headers, payload                           []byte
		enqueuedAt                                 pgtype.Timestamptz
		delayUS                                    int64
		failing                                    float64
	)
	dsts := []any{&seq, &id, &queue, &kind, &priority, &maxAttempts, &headers, &payload, &size, &enqueuedAt,
		&delayUS, &queueType, &mode, &exchange, &attempts, &failing}
	var bad string
	for i, dst := range dsts {
		if i >= len(raw) || i >= len(fds) {
			bad = fmt.Sprintf("%d columns read, want %d", len(raw), len(dsts))
			break
		}
		if err := m.Scan(fds[i].DataTypeOID, fds[i].Format, raw[i], dst); err != nil && bad == "" {
			bad = fmt.Sprintf("column %s: %v", fds[i].Name, err)
		}
	}
	env := &runtime.Envelope{
		ID: id.String, Queue: queue.String, Kind: kind.String, Payload: payload, Attempt: 1,
		MaxAttempts: int(maxAttempts.Int32), Priority: uint8(priority.Int16), EnqueuedAt: enqueuedAt.Time.UTC(),
	}
	rw := row{
		seq: seq, env: env, delay: time.Duration(max(delayUS, 0)) * time.Microsecond,
		attempts: int(attempts.Int32), failingFor: time.Duration(min(failing, 1e9) * float64(time.Second)),
	}
	rw.invalid = bad
	if rw.invalid == "" {
		rw.invalid = checkRow(env, rowFields{
			id: id, queue: queue, kind: kind, priority: priority, maxAttempts: maxAttempts,
			headers: headers, payload: payload, size: size, enqueuedAt: enqueuedAt, delayUS: delayUS,
		})
	}
	if rw.delay > 0 {
		rw.wait = runtime.QueueConfig{Name: env.Queue, Kind: env.Kind, MaxAttempts: env.MaxAttempts,
			QueueType: runtime.QueueType(queueType.String), Delay: runtime.DelayMode(mode.String), DelayExchange: exchange.String}
	}
	return rw
}
