package outbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	backoffs "github.com/queuey/queuey/internal/syncx"
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

// DefaultMissingQueueGrace is how long a Relay keeps trying a job whose
// queue does not exist when its MissingQueueGrace is zero.
const DefaultMissingQueueGrace = 10 * time.Minute

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
	// MissingQueueGrace is how long the relay keeps trying a job whose
	// queue does not exist (runtime.ErrUnknownQueue), counted from its
	// first failed try, before it moves the job to queuey_outbox_dead: in
	// a deploy, producers often ship before the workers that declare
	// their queues. Meanwhile the job waits apart (1s doubling to 15s
	// between tries) and holds back no other row. It bounds nothing else:
	// a job whose publish alone fails for another reason not known to be
	// permanent (its queue full at reject-publish, say) while the relay
	// publishes others waits apart the same way and is tried for as long
	// as it fails. Zero means DefaultMissingQueueGrace (10 minutes); it
	// must not be negative.
	MissingQueueGrace time.Duration
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
// missing or older than this relay (Migrate makes and updates them);
// errors of the database or the backend after that are logged and
// retried with a syncx. Each round takes up to BatchSize committed rows
// in a transaction, publishes them (one PublishBatch where the backend
// has it), moves the rows it cannot publish (a row that breaks the
// outbox's rules, a job too large, a queue still missing after
// MissingQueueGrace) to queuey_outbox_dead with the reason, sets apart
// for a later try a job whose queue does not exist yet or whose publish
// alone failed for now, deletes the published ones and commits; a round
// that publishes for longer than 30s fails and is retried. A delayed job
// is published with what remains of its delay then, counted from its
// insert; none when that has passed. Run may be called several times, at
// once too: each call is a relay of its own.
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
	if r.MissingQueueGrace < 0 {
		return fmt.Errorf("outbox: Relay.MissingQueueGrace %v: want 0 (for %v) or more", r.MissingQueueGrace, DefaultMissingQueueGrace)
	}
	log := r.Logger
	if log == nil {
		log = r.Backend.Logger()
	}
	rl := &relayRun{
		Relay: r,
		log:   log.With("component", "outbox relay"),
		batch: cmp.Or(r.BatchSize, DefaultBatchSize),
		poll:  cmp.Or(r.PollInterval, DefaultPollInterval),
		grace: cmp.Or(r.MissingQueueGrace, DefaultMissingQueueGrace),
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

// relayRun is one call of Run.
type relayRun struct {
	*Relay
	log   *slog.Logger
	batch int
	poll  time.Duration
	grace time.Duration
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

// checkSchema returns an error when the outbox's table is missing or
// lacks the columns this relay keeps its tries in, after waiting out a
// database that does not answer, and sets the keys of the advisory locks.
func (r *relayRun) checkSchema(ctx context.Context) error {
	var b backoff
	for {
		var oid int64
		err := r.Pool.QueryRow(ctx, "SELECT 'queuey_outbox'::regclass::oid::bigint").Scan(&oid)
		if err == nil {
			_, err = r.Pool.Exec(ctx, "SELECT inserted_at, attempts, failing_since, retry_at, last_error FROM queuey_outbox LIMIT 0")
		}
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			r.keyCommit = classCommit<<32 | oid
			r.keyBusy = classBusy<<32 | oid
			return nil
		case errors.As(err, &pgErr) && pgErr.Code == "42P01": // undefined_table
			return fmt.Errorf("outbox: relay: %w (outbox.Migrate, or schema.sql applied by a migration tool, creates it)", err)
		case errors.As(err, &pgErr) && pgErr.Code == "42703": // undefined_column
			return fmt.Errorf("outbox: relay: the outbox's tables are older than this relay: %w (outbox.Migrate, queuey outbox migrate, or schema.sql applied by a migration tool, brings them up to date)", err)
		case ctx.Err() != nil:
			return ctx.Err()
		}
		r.log.Error("outbox relay: database not reachable, retrying", "err", err)
		if !b.wait(ctx) {
			return ctx.Err()
		}
	}
}

// mode is where the loop stands in the handshake with producers.
type mode int

const (
	// spell: the relay works through rows, busy, so that committing
	// producers need not notify.
	spell mode = iota
	// drain: a spell found nothing more; the relay is no longer busy and
	// waits, without blocking, for the producers that skipped their
	// notification during the spell, relaying meanwhile.
	drain
	// last: they are done; one more look, then idle.
	last
)

// loop relays rounds until ctx ends: at once again after a round that
// found rows, after a notification, the poll interval or a job's next try
// once idle, after a backoff when a round failed. While it works through
// rows it is busy, so that committing producers need not notify
// (schema.sql); once a round finds nothing it ends being busy, waits for
// the producers that relied on it (trying their lock, never blocking on
// it: a transaction that holds it for long delays only its own jobs), and
// looks once more before it waits.
func (r *relayRun) loop(ctx context.Context) error {
	var b, d backoff
	poll := time.NewTimer(r.poll)
	defer poll.Stop()
	m := spell
	for {
		if m == spell {
			r.setBusy(ctx)
		}
		n, err := r.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			r.log.Error("outbox relay: round failed, backing off", "err", err)
			if !b.wait(ctx) {
				return nil
			}
			continue
		}
		b.reset()
		if n > 0 {
			if m == last {
				m = spell
			}
			continue
		}
		if m != last {
			r.endBusy()
			if r.producersDone(ctx) {
				m, d = last, backoff{}
				continue
			}
			// A producer that skipped is still committing, or holds its
			// lock for long (its transaction ran the trigger early and is
			// open): look again soon, or at once when a notification
			// comes, and try again.
			m = drain
			if !r.sleep(ctx, poll, min(d.next(drainFirst, drainMax), r.poll)) {
				return nil
			}
			continue
		}
		if r.idle != nil {
			r.idle()
		}
		m = spell
		if !r.sleep(ctx, poll, r.idleFor(ctx)) {
			return nil
		}
	}
}

// The waits of the drain: from drainFirst doubling to drainMax, so that a
// producer's commit a few milliseconds long is seen at once, and a
// transaction open for long costs a look every drainMax.
const (
	drainFirst = 2 * time.Millisecond
	drainMax   = 200 * time.Millisecond
)

// sleep waits d, or until a notification comes, and says false when ctx
// ended first.
func (r *relayRun) sleep(ctx context.Context, t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-ctx.Done():
		return false
	case <-r.wake:
	case <-t.C:
	}
	return true
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

// backoff waits longer after each failure in a row: 100ms doubling to
// 10s, with jitter.
type backoff struct{ n int }

func (b *backoff) reset() { b.n = 0 }

// next returns first doubled once for each call before, up to most.
func (b *backoff) next(first, most time.Duration) time.Duration {
	d := first
	for i := 0; i < b.n && d < most; i++ {
		d *= 2
	}
	b.n++
	return min(d, most)
}

// wait sleeps the next backoff, and says false when ctx ended first.
func (b *backoff) wait(ctx context.Context) bool {
	d := b.next(100*time.Millisecond, 10*time.Second)
	return backoffs.Sleep(ctx, backoffs.Jitter(d))
}
