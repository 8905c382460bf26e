package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/admin"
)

// StatsReader returns an admin.OutboxReader of the outbox in pool, for
// the dashboard and otelqueuey: each call of its OutboxStats is a
// ReadStats.
func StatsReader(pool *pgxpool.Pool) admin.OutboxReader { return statsReader{pool} }

type statsReader struct{ pool *pgxpool.Pool }

func (s statsReader) OutboxStats(ctx context.Context) (admin.OutboxStats, error) {
	return ReadStats(ctx, s.pool)
}

// statsByQueue reads the outbox and its dead table by queue, in one
// snapshot. It counts every row, keeping one small state per queue and
// kind, and reads each queue and kind's last error through the index of
// rows waiting for another try: no row's error is carried while the
// backlog is read. A row written before inserted_at existed has it
// -infinity; its age is taken from enqueued_at.
const statsByQueue = `WITH p AS (
	SELECT queue, kind, count(*) AS pending, count(retry_at) AS retrying,
		min(CASE WHEN isfinite(inserted_at) THEN inserted_at ELSE enqueued_at END) AS oldest_at,
		max(retry_at) FILTER (WHERE last_error IS NOT NULL) AS last_retry_at
	FROM queuey_outbox GROUP BY queue, kind
), d AS (
	SELECT queue, kind, count(*) AS dead FROM queuey_outbox_dead GROUP BY queue, kind
)
SELECT coalesce(p.queue, d.queue, ''), coalesce(p.kind, d.kind, ''), coalesce(p.pending, 0), coalesce(p.retrying, 0),
	coalesce(extract(epoch FROM clock_timestamp()) - extract(epoch FROM p.oldest_at), 0)::float8, coalesce(d.dead, 0),
	coalesce((SELECT o.last_error FROM queuey_outbox o
		WHERE o.retry_at = p.last_retry_at AND o.queue = p.queue AND o.kind = p.kind AND o.last_error IS NOT NULL LIMIT 1), '')
FROM p FULL JOIN d ON p.queue = d.queue AND p.kind = d.kind
ORDER BY 1, 2`

// ReadStats returns what the outbox in pool holds. It counts the rows of
// both tables, so its cost grows with the backlog, a few fixed-size
// aggregates per row; the last error of each queue and kind is one lookup
// by index.
func ReadStats(ctx context.Context, pool *pgxpool.Pool) (admin.OutboxStats, error) {
	rows, err := pool.Query(ctx, statsByQueue)
	if err != nil {
		return admin.OutboxStats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	defer rows.Close()
	var s admin.OutboxStats
	for rows.Next() {
		var (
			q      admin.OutboxQueueStats
			oldest float64
		)
		if err := rows.Scan(&q.Queue, &q.Kind, &q.Pending, &q.Retrying, &oldest, &q.Dead, &q.LastError); err != nil {
			return admin.OutboxStats{}, fmt.Errorf("outbox: stats: %w", err)
		}
		q.OldestAge = seconds(oldest)
		s.Pending += q.Pending
		s.Retrying += q.Retrying
		s.Dead += q.Dead
		s.OldestAge = max(s.OldestAge, q.OldestAge)
		s.Queues = append(s.Queues, q)
	}
	if err := rows.Err(); err != nil {
		return admin.OutboxStats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	return s, nil
}

// seconds converts s seconds to a duration, bounded to what one holds.
func seconds(s float64) time.Duration {
	switch {
	case !(s > 0): // NaN too
		return 0
	case s > 1e9:
		return time.Duration(1e9) * time.Second
	}
	return time.Duration(s * float64(time.Second))
}
