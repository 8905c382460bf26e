package outbox

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Stats is what an outbox holds at one moment: its backlog and its dead
// rows, in all and by queue.
type Stats struct {
	// Pending is the rows not yet published, Retrying among them.
	Pending int64 `json:"pending"`
	// Retrying is the rows the backend refused for now (a queue not
	// declared yet, most often), which the relay tries again.
	Retrying int64 `json:"retrying"`
	// OldestAge is how long ago the oldest pending row was inserted, on
	// the database's clock (a row becomes visible at its transaction's
	// commit); zero when none is pending.
	OldestAge time.Duration `json:"oldest_age_ns"`
	// Dead is the rows in queuey_outbox_dead.
	Dead int64 `json:"dead"`
	// Queues are the same by queue, in name order: every queue with a
	// pending or dead row.
	Queues []QueueStats `json:"queues"`
}

// QueueStats is what an outbox holds for one queue.
type QueueStats struct {
	Queue     string        `json:"queue"`
	Pending   int64         `json:"pending"`
	Retrying  int64         `json:"retrying"`
	OldestAge time.Duration `json:"oldest_age_ns"`
	Dead      int64         `json:"dead"`
	// LastError is why the relay's latest try of one of the queue's
	// retrying rows failed; empty when none is retrying.
	LastError string `json:"last_error,omitempty"`
}

// statsByQueue reads the outbox and its dead table by queue, in one
// snapshot.
const statsByQueue = `WITH p AS (
	SELECT queue, count(*) AS pending, count(retry_at) AS retrying,
		extract(epoch FROM clock_timestamp()) - extract(epoch FROM min(inserted_at)) AS oldest,
		(array_agg(last_error ORDER BY retry_at DESC) FILTER (WHERE last_error IS NOT NULL))[1] AS last_error
	FROM queuey_outbox GROUP BY queue
), d AS (
	SELECT queue, count(*) AS dead FROM queuey_outbox_dead GROUP BY queue
)
SELECT coalesce(p.queue, d.queue), coalesce(p.pending, 0), coalesce(p.retrying, 0),
	coalesce(p.oldest, 0)::float8, coalesce(d.dead, 0), coalesce(p.last_error, '')
FROM p FULL JOIN d ON p.queue = d.queue`

// ReadStats returns what the outbox in pool holds. It reads both tables
// whole: its cost grows with the backlog.
func ReadStats(ctx context.Context, pool *pgxpool.Pool) (Stats, error) {
	rows, err := pool.Query(ctx, statsByQueue)
	if err != nil {
		return Stats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	defer rows.Close()
	var s Stats
	for rows.Next() {
		var (
			q      QueueStats
			oldest float64
		)
		if err := rows.Scan(&q.Queue, &q.Pending, &q.Retrying, &oldest, &q.Dead, &q.LastError); err != nil {
			return Stats{}, fmt.Errorf("outbox: stats: %w", err)
		}
		q.OldestAge = seconds(oldest)
		s.Pending += q.Pending
		s.Retrying += q.Retrying
		s.Dead += q.Dead
		s.OldestAge = max(s.OldestAge, q.OldestAge)
		s.Queues = append(s.Queues, q)
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("outbox: stats: %w", err)
	}
	slices.SortFunc(s.Queues, func(a, b QueueStats) int {
		switch {
		case a.Queue < b.Queue:
			return -1
		case a.Queue > b.Queue:
			return 1
		}
		return 0
	})
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
