package cli

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/dashboard"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// DatabaseURLEnv names the environment variable that --database-url
// defaults to.
const DatabaseURLEnv = "QUEUEY_DATABASE_URL"

type outboxCmd struct {
	Relay   outboxRelayCmd   `cmd:"" help:"Publish the jobs committed to the outbox to the broker, until interrupted."`
	Migrate outboxMigrateCmd `cmd:"" help:"Create the outbox's tables and trigger in the database, or bring them up to date."`
	Status  outboxStatusCmd  `cmd:"" help:"Show the outbox's backlog (pending and retrying rows, the oldest's age) and dead rows, in all and by queue."`
	Dead    outboxDeadCmd    `cmd:"" help:"List, put back or delete the jobs the relay could not publish."`
}

// database is the flag every outbox command takes.
type database struct {
	DatabaseURL string `name:"database-url" placeholder:"URL" help:"PostgreSQL URL of the application's database, which holds the outbox (default: $QUEUEY_DATABASE_URL)."`
}

// pool opens the database of d, or of QUEUEY_DATABASE_URL.
func (d database) pool(r *run) (*pgxpool.Pool, string, error) {
	url := d.DatabaseURL
	if url == "" {
		url = r.env.Getenv(DatabaseURLEnv)
	}
	if url == "" {
		return nil, "", usagef("no database: set --database-url or %s", DatabaseURLEnv)
	}
	pool, err := pgxpool.New(r.ctx, url)
	if err != nil {
		return nil, "", usagef("--database-url: %v", err)
	}
	return pool, dashboard.Redact(url), nil
}

// outboxPanel returns what the dashboard reads the outbox of d (or of
// QUEUEY_DATABASE_URL) with, and closes it with; a nil reader when neither
// names a database.
func (d database) outboxPanel(r *run) (admin.OutboxReader, func(), error) {
	if d.DatabaseURL == "" && r.env.Getenv(DatabaseURLEnv) == "" {
		return nil, func() {}, nil
	}
	pool, _, err := d.pool(r)
	if err != nil {
		return nil, nil, err
	}
	return outbox.StatsReader(pool), pool.Close, nil
}

type outboxMigrateCmd struct {
	database
}

func (c *outboxMigrateCmd) Run(r *run) error {
	pool, shown, err := c.pool(r)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := outbox.Migrate(r.ctx, pool); err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	printf(r.env.Stdout, "queuey outbox: the outbox's tables exist in %s\n", shown)
	return nil
}

type outboxRelayCmd struct {
	database
	BatchSize         int           `name:"batch-size" default:"100" help:"Rows taken, published and deleted in one transaction; a relay that dies repeats at most one batch."`
	PollInterval      time.Duration `name:"poll-interval" default:"1s" help:"How often to look for rows when no notification comes."`
	MissingQueueGrace time.Duration `name:"missing-queue-grace" default:"10m" help:"How long to keep trying a job whose queue does not exist (yet) before moving it to the dead rows."`
}

func (c *outboxRelayCmd) Run(r *run) error {
	if c.BatchSize < 1 {
		return usagef("--batch-size %d: want 1 or more", c.BatchSize)
	}
	if c.PollInterval <= 0 {
		return usagef("--poll-interval %v: want more than 0", c.PollInterval)
	}
	if c.MissingQueueGrace <= 0 {
		return usagef("--missing-queue-grace %v: want more than 0", c.MissingQueueGrace)
	}
	pool, shown, err := c.pool(r)
	if err != nil {
		return err
	}
	defer pool.Close()
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	backend, ok := be.(runtime.Backend)
	if !ok {
		return fmt.Errorf("the backend %T cannot publish jobs", be)
	}
	printf(r.env.Stdout, "queuey outbox relay: from %s to %s (Ctrl-C stops)\n", shown, dashboard.Redact(r.g.URL))
	relay := &outbox.Relay{
		Pool:              pool,
		Backend:           backend,
		BatchSize:         c.BatchSize,
		PollInterval:      c.PollInterval,
		MissingQueueGrace: c.MissingQueueGrace,
		Logger:            slog.New(slog.NewTextHandler(r.env.Stderr, nil)),
	}
	return relay.Run(r.ctx)
}
