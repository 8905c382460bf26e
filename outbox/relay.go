package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/runtime"
)

// DefaultBatchSize is how many rows a Relay takes in one transaction when
// its BatchSize is zero.
const DefaultBatchSize = 100

// DefaultPollInterval is how often a Relay looks for rows without being
// woken, when its PollInterval is zero.
const DefaultPollInterval = time.Second

// publishTimeout bounds a round's publishing: a broker that blocks
// publishers (a resource alarm) fails the round, which is retried after
// a backoff, instead of holding its rows' locks for as long as it lasts.
const publishTimeout = 30 * time.Second

// channel is what the outbox's trigger notifies on commit.
const channel = "queuey_outbox"

// Relay moves committed jobs from the outbox to a backend. Set its fields,
// then call Run; its zero value needs only Pool and Backend. Several
// relays, in one process or many, may run on one outbox at once: each row
// is taken by one of them (SELECT ... FOR UPDATE SKIP LOCKED).
type Relay struct {
	// Pool is the database the outbox lives in. Required.
	Pool *pgxpool.Pool
	// Backend is where jobs go: a *rabbitmq.Backend in production.
	// Required. The relay only publishes to it; the queues must exist.
	Backend runtime.Backend
	// BatchSize is how many rows the relay takes, publishes and deletes in
	// one transaction; zero means DefaultBatchSize. A relay that dies
	// mid-batch leaves at most this many jobs to be published again.
	BatchSize int
	// PollInterval is how often an idle relay looks for rows when no
	// notification wakes it (a commit that inserted jobs wakes idle
	// relays, so polling is the fallback for a lost listening
	// connection); zero means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives what the relay reports: a row moved aside, an error
	// it backs off from. Nil means the Backend's logger.
	Logger *slog.Logger

	// listening, when set, is called each time the relay starts listening
	// for notifications; idle, each time it has found no row left and
	// waits. Tests use them to wait for events instead of time.
	listening func()
	idle      func()

	mu       sync.Mutex
	targeted map[string]runtime.QueueConfig // told to the backend (WaitTargeter)
}

// Run relays until ctx ends, then returns nil. It returns an error at
// once when the relay's fields are invalid or the outbox's tables are
// missing (Migrate makes them); errors of the database or the backend
// after that are logged and retried with a backoff. Each round takes up
// to BatchSize committed rows in a transaction, publishes them (one
// PublishBatch where the backend has it), moves rows the backend refuses
// for good (a missing queue, a job too large, an invalid row) to
// queuey_outbox_dead with the reason, deletes the published ones and
// commits; a round that publishes for longer than 30s fails and is
// retried. A delayed job is published with what remains of its delay
// then, counted from its insert; none when that has passed. Run may be
// called several times, at once too: each call is a relay of its own.
func (r *Relay) Run(ctx context.Context) error {
	if r.Pool == nil {
		return errors.New("outbox: Relay.Pool is nil: set it to the database of the outbox")
	}
	if r.Backend == nil {
		return errors.New("outbox: Relay.Backend is nil: set it to the backend jobs go to")
	}
	if r.BatchSize < 0 {
		return fmt.Errorf("outbox: Relay.BatchSize %d: want 0 (for %d) or more", r.BatchSize, DefaultBatchSize)
	}
	if r.PollInterval < 0 {
		return fmt.Errorf("outbox: Relay.PollInterval %v: want 0 (for %v) or more", r.PollInterval, DefaultPollInterval)
	}
	log := r.Logger
	if log == nil {
		log = r.Backend.Logger()
	}
	rl := &relayRun{
		Relay: r,
		log:   log.With("component", "outbox relay"),
		batch: cmpOr(r.BatchSize, DefaultBatchSize),
		poll:  cmpOr(r.PollInterval, DefaultPollInterval),
		wake:  make(chan struct{}, 1),
	}
	if err := rl.checkSchema(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { rl.listen(lctx) })
	defer func() {
		stop()
		wg.Wait()
		rl.dropLock()
	}()
	return rl.loop(ctx)
}

// cmpOr returns v, or def when v is zero.
func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// relayRun is one call of Run.
type relayRun struct {
	*Relay
	log   *slog.Logger
	batch int
	poll  time.Duration
	wake  chan struct{} // a notification came, or listening (re)started

	// The handshake with committing producers (schema.sql,
	// queuey_outbox_notify): lock is the session that holds "busy" while
	// busy is true; keyBusy and keyCommit are the advisory locks' keys.
	lock               *pgx.Conn
	busy               bool
	keyBusy, keyCommit int64
}

// The advisory locks' key classes, as in schema.sql: a key is the class
// shifted up 32 bits, or'ed with queuey_outbox's oid.
const (
	classCommit = 1364541184
	classBusy   = 1364541185
)

// checkSchema returns an error when the outbox's table is missing, after
// waiting out a database that does not answer, and sets the keys of the
// advisory locks.
func (r *relayRun) checkSchema(ctx context.Context) error {
	var b backoff
	for {
		var oid int64
		err := r.Pool.QueryRow(ctx, "SELECT 'queuey_outbox'::regclass::oid::bigint").Scan(&oid)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			r.keyCommit = classCommit<<32 | oid
			r.keyBusy = classBusy<<32 | oid
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
			return fmt.Errorf("outbox: relay: %w (outbox.Migrate, or schema.sql applied by a migration tool, creates it)", err)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		r.log.Error("outbox relay: database not reachable, retrying", "err", err)
		if !b.wait(ctx) {
			return ctx.Err()
		}
	}
}

// loop relays rounds until ctx ends: at once again after a round that
// found rows, after a notification or the poll interval once idle, after a
// backoff when a round failed. While it works through rows it is busy, so
// that committing producers need not notify (schema.sql); once a round
// finds nothing it ends being busy, waits for the producers that relied on
// it, and looks once more before it waits.
func (r *relayRun) loop(ctx context.Context) error {
	var b backoff
	poll := time.NewTimer(r.poll)
	defer poll.Stop()
	lastLook := false // the round after a busy spell, not busy
	for {
		if !lastLook {
			r.setBusy(ctx)
		}
		n, err := r.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		lastLook = false
		if err != nil {
			r.log.Error("outbox relay: round failed, backing off", "err", err)
			if !b.wait(ctx) {
				return nil
			}
			continue
		}
		b.reset()
		if n > 0 {
			continue // a busy spell ends with a round that finds nothing
		}
		if r.busy {
			if err := r.endBusy(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				r.log.Warn("outbox relay: ending a busy spell failed; looking again", "err", err)
				continue
			}
			lastLook = true
			continue
		}
		if r.idle != nil {
			r.idle()
		}
		poll.Reset(r.poll)
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-poll.C:
		}
	}
}

// setBusy takes "busy" (shared) on the relay's lock session, once
// Run's first round, or one after a wake, starts. Without it the relay
// still relays: producers then notify.
func (r *relayRun) setBusy(ctx context.Context) {
	if r.busy {
		return
	}
	if r.lock == nil {
		conn, err := r.Pool.Acquire(ctx)
		if err != nil {
			return
		}
		// The session is the relay's alone, and its locks with it: it
		// is closed, never returned to the pool.
		r.lock = conn.Hijack()
	}
	if _, err := r.lock.Exec(ctx, "SELECT pg_advisory_lock_shared($1)", r.keyBusy); err != nil {
		r.log.Warn("outbox relay: taking the busy lock failed; producers notify meanwhile", "err", err)
		r.dropLock()
		return
	}
	r.busy = true
}

// endBusy drops "busy", then waits for the producers that skipped their
// notification because the relay was busy, by taking "commit" and
// dropping it.
func (r *relayRun) endBusy(ctx context.Context) error {
	r.busy = false
	sql := fmt.Sprintf("SELECT pg_advisory_unlock_shared(%d); SELECT pg_advisory_lock(%d); SELECT pg_advisory_unlock(%d)",
		r.keyBusy, r.keyCommit, r.keyCommit)
	if _, err := r.lock.Exec(ctx, sql); err != nil {
		r.dropLock()
		return err
	}
	return nil
}

// dropLock closes the lock session, which drops what it holds.
func (r *relayRun) dropLock() {
	r.busy = false
	if r.lock == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.lock.Close(ctx)
	r.lock = nil
}

// listen wakes the loop on each notification of the outbox's channel, on
// a connection of its own, until ctx ends; a lost connection is made
// again after a backoff (meanwhile the loop polls).
func (r *relayRun) listen(ctx context.Context) {
	var b backoff
	for ctx.Err() == nil {
		err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("outbox relay: listening for notifications failed; polling meanwhile", "err", err)
		b.wait(ctx)
	}
}

// listenOnce listens until ctx ends or the connection fails.
func (r *relayRun) listenOnce(ctx context.Context) error {
	conn, err := r.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection is this listener's alone: closed, never returned
	// to the pool with a LISTEN on it.
	c := conn.Hijack()
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(cctx)
	}()
	if _, err := c.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	if r.listening != nil {
		r.listening()
	}
	r.poke() // rows committed before LISTEN
	for {
		if _, err := c.WaitForNotification(ctx); err != nil {
			return err
		}
		r.poke()
	}
}

// poke wakes the loop, or leaves it to wake on the wake already pending.
func (r *relayRun) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// row is one outbox row, as the relay reads it.
type row struct {
	seq     int64
	env     *runtime.Envelope
	delay   time.Duration
	wait    runtime.QueueConfig // for a delayed job
	invalid string              // why the row cannot be a job, if it cannot
}

// selectRows takes the oldest committed rows no other relay holds, with
// the delay each has left on the database's clock.
const selectRows = `SELECT seq, id, queue, kind, priority, max_attempts, headers, payload, enqueued_at,
	coalesce(greatest(ceil(extract(epoch FROM due_at - clock_timestamp()) * 1000000), 0), 0)::bigint,
	queue_type, delay_mode, delay_exchange
FROM queuey_outbox ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`

// round relays one batch and returns how many rows it took. An error
// means rows are left for a later round.
func (r *relayRun) round(ctx context.Context) (int, error) {
	tx, err := r.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	rows, err := r.read(ctx, tx)
	if err != nil || len(rows) == 0 {
		return 0, err
	}
	pctx, cancelPublish := context.WithTimeout(ctx, publishTimeout)
	errs := r.publish(pctx, rows)
	cancelPublish()

	// What the backend has is deleted, even when ctx ended meanwhile:
	// each row left would be published again.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var (
		done      []int64
		transient error
	)
	for i, rw := range rows {
		switch err := errs[i]; {
		case err == nil:
			done = append(done, rw.seq)
		case permanent(err):
			reason := err.Error()
			if _, derr := tx.Exec(fctx, moveDead, rw.seq, reason); derr != nil {
				return len(rows), fmt.Errorf("move job %q aside: %w", rw.env.ID, derr)
			}
			r.log.Warn("outbox relay: job refused, moved to queuey_outbox_dead",
				"id", rw.env.ID, "queue", rw.env.Queue, "kind", rw.env.Kind, "reason", reason)
		case transient == nil:
			transient = fmt.Errorf("publish job %q onto %q: %w", rw.env.ID, rw.env.Queue, err)
		}
	}
	if len(done) > 0 {
		if _, err := tx.Exec(fctx, "DELETE FROM queuey_outbox WHERE seq = ANY($1)", done); err != nil {
			return len(rows), fmt.Errorf("delete published rows: %w", err)
		}
	}
	if err := tx.Commit(fctx); err != nil {
		return len(rows), fmt.Errorf("commit: %w", err)
	}
	return len(rows), transient
}

// moveDead moves the row $1 to queuey_outbox_dead with reason $2.
const moveDead = `WITH d AS (DELETE FROM queuey_outbox WHERE seq = $1 RETURNING *)
INSERT INTO queuey_outbox_dead (seq, id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange, reason)
SELECT seq, id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange, $2 FROM d`

// read takes a batch of rows in tx.
func (r *relayRun) read(ctx context.Context, tx pgx.Tx) ([]row, error) {
	res, err := tx.Query(ctx, selectRows, r.batch)
	if err != nil {
		return nil, fmt.Errorf("select rows: %w", err)
	}
	defer res.Close()
	var rows []row
	for res.Next() {
		var (
			rw                                  row
			env                                 runtime.Envelope
			priority                            int16
			maxAttempts                         int32
			headers                             []byte
			delayUS                             int64
			queueType, delayMode, delayExchange *string
		)
		if err := res.Scan(&rw.seq, &env.ID, &env.Queue, &env.Kind, &priority, &maxAttempts, &headers, &env.Payload,
			&env.EnqueuedAt, &delayUS, &queueType, &delayMode, &delayExchange); err != nil {
			return nil, fmt.Errorf("read row: %w", err)
		}
		env.Attempt = 1
		env.MaxAttempts = int(maxAttempts)
		env.EnqueuedAt = env.EnqueuedAt.UTC()
		if priority < 0 || priority > 255 {
			rw.invalid = fmt.Sprintf("priority %d, want 0..255", priority)
		}
		env.Priority = uint8(priority)
		if headers != nil {
			if err := json.Unmarshal(headers, &env.Headers); err != nil {
				rw.invalid = fmt.Sprintf("headers %s: want an object of strings: %v", headers, err)
			}
		}
		rw.env = &env
		rw.delay = time.Duration(delayUS) * time.Microsecond
		if rw.delay > 0 {
			rw.wait = runtime.QueueConfig{Name: env.Queue, Kind: env.Kind, MaxAttempts: env.MaxAttempts,
				QueueType: runtime.QueueType(deref(queueType)), Delay: runtime.DelayMode(deref(delayMode)), DelayExchange: deref(delayExchange)}
		}
		rows = append(rows, rw)
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("read rows: %w", err)
	}
	return rows, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// publish publishes rows and returns one error per row: the jobs due now
// in one batch where the backend has PublishBatch, the delayed ones one by
// one.
func (r *relayRun) publish(ctx context.Context, rows []row) []error {
	errs := make([]error, len(rows))
	now := make([]*runtime.Envelope, 0, len(rows))
	idx := make([]int, 0, len(rows))
	for i, rw := range rows {
		switch {
		case rw.invalid != "":
			errs[i] = fmt.Errorf("%w: outbox row %d (job %q): %s", runtime.ErrInvalidOption, rw.seq, rw.env.ID, rw.invalid)
		case rw.delay > 0:
			errs[i] = r.publishDelayed(ctx, rw)
		default:
			now, idx = append(now, rw.env), append(idx, i)
		}
	}
	if bp, ok := r.Backend.(runtime.BatchPublisher); ok && len(now) > 1 {
		for j, err := range bp.PublishBatch(ctx, now) {
			errs[idx[j]] = err
		}
		return errs
	}
	for j, env := range now {
		errs[idx[j]] = r.Backend.Publish(ctx, env, 0)
	}
	return errs
}

// publishDelayed publishes rw after what is left of its delay, telling the
// backend the queue's config first where it needs it (WaitTargeter).
func (r *relayRun) publishDelayed(ctx context.Context, rw row) error {
	if wt, ok := r.Backend.(runtime.WaitTargeter); ok {
		r.mu.Lock()
		known, ok := r.targeted[rw.wait.Name]
		r.mu.Unlock()
		if !ok || known != rw.wait {
			if err := wt.TargetWaits(ctx, rw.wait); err != nil {
				return err
			}
			r.mu.Lock()
			if r.targeted == nil {
				r.targeted = make(map[string]runtime.QueueConfig)
			}
			r.targeted[rw.wait.Name] = rw.wait
			r.mu.Unlock()
		}
	}
	return r.Backend.Publish(ctx, rw.env, rw.delay)
}

// permanent says whether publishing again cannot help: the backend
// refused the job itself, not the moment.
func permanent(err error) bool {
	for _, target := range []error{
		runtime.ErrUnknownQueue, runtime.ErrTooLarge, runtime.ErrInvalidOption, runtime.ErrInvalidConfig,
		runtime.ErrDelayTooLong, runtime.ErrKindConflict, runtime.ErrQueueMismatch,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// backoff waits longer after each failure in a row: 100ms doubling to
// 10s, with jitter.
type backoff struct{ n int }

func (b *backoff) reset() { b.n = 0 }

// wait sleeps the next backoff, and says false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := min(100*time.Millisecond<<min(b.n, 7), 10*time.Second)
	b.n++
	d = d/2 + rand.N(d/2+1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
