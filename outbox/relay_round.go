package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/runtime"
)

// beginRound starts a round's transaction: no lock in it is waited for
// longer than 10s (a migration holding the table, say); the round then
// fails and is tried again after a backoff.
const beginRound = "BEGIN; SET LOCAL lock_timeout = '10s'"

// round relays one batch and returns how many rows it took. An error
// means rows are left for a later round.
func (r *relayRun) round(ctx context.Context) (int, error) {
	tx, err := r.Pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: beginRound})
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
		done     []int64
		failed   []int // rows the backend failed for now
		answered int   // rows the backend took or refused
	)
	for i, rw := range rows {
		switch err := errs[i]; {
		case err == nil:
			done = append(done, rw.seq)
			answered++
		case rw.invalid != "":
			if err := r.moveDead(fctx, tx, rw, fmt.Sprintf("outbox row %d cannot be a job: %s", rw.seq, rw.invalid)); err != nil {
				return len(rows), err
			}
		case errors.Is(err, runtime.ErrUnknownQueue):
			answered++
			if err := r.later(fctx, tx, rw, err, true); err != nil {
				return len(rows), err
			}
		case permanent(err):
			answered++
			if err := r.moveDead(fctx, tx, rw, err.Error()); err != nil {
				return len(rows), err
			}
		default:
			failed = append(failed, i)
		}
	}
	// A row that failed while the backend took or refused others failed
	// alone (its queue full, at reject-publish, say): it waits apart for
	// its next try, for as long as it fails, never moved aside for it.
	// When every row failed, the backend is likely away: the rows stay,
	// and the relay backs off.
	var transient error
	for _, i := range failed {
		rw := rows[i]
		if answered == 0 {
			transient = fmt.Errorf("publish job %q onto %q: %w", rw.env.ID, rw.env.Queue, errs[i])
			break
		}
		if err := r.later(fctx, tx, rw, errs[i], false); err != nil {
			return len(rows), err
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

// moveDead moves the row $1 to queuey_outbox_dead with reason $2. Every
// column is copied as it is; the dead table's NOT NULL columns take a
// placeholder for a NULL, which the outbox's schema never holds.
const moveDead = `WITH d AS (DELETE FROM queuey_outbox WHERE seq = $1 RETURNING *)
INSERT INTO queuey_outbox_dead (seq, id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange, reason)
SELECT seq, coalesce(id, ''), coalesce(queue, ''), coalesce(kind, ''), coalesce(priority, -1), coalesce(max_attempts, 0), headers,
	coalesce(payload, ''), coalesce(enqueued_at, '-infinity'), due_at, queue_type, delay_mode, delay_exchange, $2 FROM d`

// moveDead moves rw to queuey_outbox_dead with reason, in tx, and logs it.
func (r *relayRun) moveDead(ctx context.Context, tx pgx.Tx, rw row, reason string) error {
	if _, err := tx.Exec(ctx, moveDead, rw.seq, reason); err != nil {
		return fmt.Errorf("move outbox row %d (job %q) aside: %w", rw.seq, errs.Clip(rw.env.ID), err)
	}
	r.log.Warn("outbox relay: job cannot be published, moved to queuey_outbox_dead",
		"seq", rw.seq, "id", errs.Clip(rw.env.ID), "queue", errs.Clip(rw.env.Queue), "kind", errs.Clip(rw.env.Kind), "reason", reason)
	return nil
}

// The waits between a row's tries: 1s doubling to 15s.
const (
	retryFirst = time.Second
	retryMax   = 15 * time.Second
)

// setAside sets the row $1 apart for another try in $2 microseconds,
// with the error $3.
const setAside = `UPDATE queuey_outbox SET attempts = attempts + 1, failing_since = coalesce(failing_since, clock_timestamp()),
	retry_at = clock_timestamp() + $2::bigint * interval '1 microsecond', last_error = $3 WHERE seq = $1`

// later sets rw apart for another try, the backend having refused it for
// now with err. With graced (its queue does not exist), it moves rw to
// queuey_outbox_dead instead once rw has failed for the relay's grace;
// otherwise rw is tried again for as long as it fails.
func (r *relayRun) later(ctx context.Context, tx pgx.Tx, rw row, err error, graced bool) error {
	if graced && rw.failingFor >= r.grace {
		return r.moveDead(ctx, tx, rw, fmt.Sprintf("%v; tried %d times over %v (Relay.MissingQueueGrace %v)",
			err, rw.attempts+1, rw.failingFor.Round(time.Second), r.grace))
	}
	b := backoff{n: rw.attempts}
	wait := b.next(retryFirst, retryMax)
	if graced {
		wait = min(wait, r.grace-rw.failingFor)
	}
	if _, xerr := tx.Exec(ctx, setAside, rw.seq, wait.Microseconds(), err.Error()); xerr != nil {
		return fmt.Errorf("set outbox row %d (job %q) aside: %w", rw.seq, errs.Clip(rw.env.ID), xerr)
	}
	if rw.attempts == 0 {
		if graced {
			r.log.Warn("outbox relay: job not published; trying again",
				"seq", rw.seq, "id", errs.Clip(rw.env.ID), "queue", errs.Clip(rw.env.Queue), "error", err, "for_up_to", r.grace)
		} else {
			r.log.Warn("outbox relay: job not published; trying again until it is",
				"seq", rw.seq, "id", errs.Clip(rw.env.ID), "queue", errs.Clip(rw.env.Queue), "error", err)
		}
	}
	return nil
}

// publish publishes rows and returns one error per row: the jobs due now
// in one batch where the backend has PublishBatch, the delayed ones one by
// one. A row that cannot be a job is not published.
func (r *relayRun) publish(ctx context.Context, rows []row) []error {
	errs := make([]error, len(rows))
	now := make([]*runtime.Envelope, 0, len(rows))
	idx := make([]int, 0, len(rows))
	for i, rw := range rows {
		switch {
		case rw.invalid != "":
			errs[i] = fmt.Errorf("%w: outbox row %d: %s", runtime.ErrInvalidOption, rw.seq, rw.invalid)
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
// refused the job itself, not the moment. (A queue that does not exist
// may yet be declared: the relay tries it again for a while.)
func permanent(err error) bool {
	for _, target := range []error{
		runtime.ErrTooLarge, runtime.ErrInvalidOption, runtime.ErrInvalidConfig,
		runtime.ErrDelayTooLong, runtime.ErrKindConflict, runtime.ErrQueueMismatch,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
