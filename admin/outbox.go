package admin

import (
	"context"
	"time"
)

// OutboxReader reads what a transactional outbox (package outbox) holds:
// outbox.StatsReader makes one of a database pool. The dashboard shows it
// and otelqueuey measures it; neither needs the database driver.
type OutboxReader interface {
	OutboxStats(ctx context.Context) (OutboxStats, error)
}

// OutboxStats is what an outbox holds at one moment: its backlog and its
// dead rows, in all and by queue.
type OutboxStats struct {
	// Pending is the rows not yet published, Retrying among them.
	Pending int64 `json:"pending"`
	// Retrying is the rows the backend refused for now (a queue not
	// declared yet, most often), which the relay tries again.
	Retrying int64 `json:"retrying"`
	// OldestAge is how long ago the oldest pending row was inserted, on
	// the database's clock (a row becomes visible at its transaction's
	// commit); zero when none is pending.
	OldestAge time.Duration `json:"oldest_age_ns"`
	// Dead is the rows the relay could not publish, set aside.
	Dead int64 `json:"dead"`
	// Queues are the same by queue and kind, in that order: every pair
	// with a pending or dead row.
	Queues []OutboxQueueStats `json:"queues"`
}

// OutboxQueueStats is what an outbox holds for one queue and kind (a
// queue has one kind, unless rows were written wrong).
type OutboxQueueStats struct {
	Queue     string        `json:"queue"`
	Kind      string        `json:"kind"`
	Pending   int64         `json:"pending"`
	Retrying  int64         `json:"retrying"`
	OldestAge time.Duration `json:"oldest_age_ns"`
	Dead      int64         `json:"dead"`
	// LastError is why the relay's latest try of one of these retrying
	// rows failed; empty when none is retrying.
	LastError string `json:"last_error,omitempty"`
}
