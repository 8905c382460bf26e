package outbox

import (
	"context"
	"time"
)

// The relay's side of the handshake with committing producers
// (schema.sql, queuey_outbox_notify). Every lock is tried, never waited
// for: a producer's transaction may hold "commit" for as long as it stays
// open, and the relay must go on relaying meanwhile.

// session returns the relay's lock session, a connection of its own
// (its locks are the session's): closed, never returned to the pool.
func (r *relayRun) session(ctx context.Context) bool {
	if r.lock != nil {
		return true
	}
	conn, err := r.Pool.Acquire(ctx)
	if err != nil {
		return false
	}
	r.lock = conn.Hijack()
	return true
}

// setBusy takes "busy" (shared) on the relay's lock session, once a
// spell starts. When it cannot, the relay still relays: producers then
// notify.
func (r *relayRun) setBusy(ctx context.Context) {
	if r.busy || !r.session(ctx) {
		return
	}
	var ok bool
	if err := r.lock.QueryRow(ctx, "SELECT pg_try_advisory_lock_shared($1)", r.keyBusy).Scan(&ok); err != nil {
		r.log.Warn("outbox relay: taking the busy lock failed; producers notify meanwhile", "err", err)
		r.dropLock()
		return
	}
	r.busy = ok
}

// endBusy drops "busy": producers that commit from now on notify.
func (r *relayRun) endBusy() {
	if !r.busy {
		return
	}
	r.busy = false
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.lock.Exec(ctx, "SELECT pg_advisory_unlock_shared($1)", r.keyBusy); err != nil {
		r.dropLock()
	}
}

// producersDone says whether no producer holds "commit": every producer
// that skipped its notification while the relay was busy has committed
// (or rolled back), so a look from now on sees its rows. It takes
// "commit" and lets it go in one expression, without waiting.
func (r *relayRun) producersDone(ctx context.Context) bool {
	if !r.session(ctx) {
		return false
	}
	var ok bool
	err := r.lock.QueryRow(ctx, "SELECT CASE WHEN pg_try_advisory_lock($1) THEN pg_advisory_unlock($1) ELSE false END", r.keyCommit).Scan(&ok)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("outbox relay: trying the producers' lock failed; looking again", "err", err)
		}
		r.dropLock()
		return false
	}
	return ok
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

// idleFor returns how long an idle relay waits before it looks again
// unwoken: the poll interval, or less when a job set apart for another
// try is due sooner.
func (r *relayRun) idleFor(ctx context.Context) time.Duration {
	var s *float64
	err := r.Pool.QueryRow(ctx, `SELECT (extract(epoch FROM min(retry_at)) - extract(epoch FROM clock_timestamp()))::float8
FROM queuey_outbox WHERE retry_at IS NOT NULL`).Scan(&s)
	switch {
	case err != nil || s == nil || !(*s < r.poll.Seconds()): // NaN too
		return r.poll
	case *s < 0.001:
		return time.Millisecond
	}
	return time.Duration(*s * float64(time.Second))
}
