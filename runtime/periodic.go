package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/syncx"
)

// HeaderTick is the header that carries, on each job a schedule enqueues,
// the time of its tick in UTC as RFC 3339.
const HeaderTick = "queuey-tick"

// leasePrefix starts the lease name of every schedule, so that schedules
// and other leases never share one.
const leasePrefix = "schedule."

// Periodic makes w enqueue job() onto q at each tick of s while w runs,
// with the job ID s.Name, "@", and the tick in UTC as RFC 3339
// ("reports.daily@2026-11-30T06:00:00Z"), and the tick in HeaderTick.
// Every worker of every process may register the same schedule: through the
// backend's lease (Leaser) one of them at a time fires the ticks, and when
// it stops or dies another takes over.
//
// The enqueues go through the worker's producer (WithProducer), with its
// middleware, as the application's own enqueues do.
//
// Ticks are at least once: a tick is enqueued once in the normal run, and
// twice at worst, both times with its one ID, when the scheduler dies
// between enqueueing a tick's job and recording the tick, or when the
// record fails. A tick is never fired before its time. Ticks missed while
// no scheduler ran are handled as s.Missed says.
//
// q is declared when Run starts, whether or not w handles it. A bad
// schedule, or a backend that is not a Leaser, is reported by Run.
func Periodic[T any](w *Worker, q QueueConfig, s Schedule, job func() T) {
	if err := checkJobType[T](&q); err != nil {
		w.refuse(fmt.Errorf("schedule on queue %q: %w", q.Name, err))
		return
	}
	w.addPeriodic(q, s, func() ([]byte, error) {
		j := job()
		return msgpack.Marshal(&j)
	})
}

// periodic is one schedule of a worker.
type periodic struct {
	w       *Worker
	queue   QueueConfig
	sched   Schedule
	next    func(time.Time) time.Time
	payload func() ([]byte, error)
}

func (w *Worker) addPeriodic(q QueueConfig, s Schedule, payload func() ([]byte, error)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic(fmt.Sprintf("queuey: schedule on queue %q added after Worker.Run started; add every schedule before Run", q.Name))
	}
	if err := q.Validate(); err != nil {
		w.regErrs = append(w.regErrs, err)
		return
	}
	s = s.withDefaults(q.Name)
	next, err := s.validate()
	if err != nil {
		w.regErrs = append(w.regErrs, fmt.Errorf("schedule of queue %q: %w", q.Name, err))
		return
	}
	for _, p := range w.periodics {
		if p.sched.Name == s.Name {
			w.regErrs = append(w.regErrs, fmt.Errorf("%w: two schedules named %q on one worker; give each its own Schedule.Name", ErrInvalidOption, s.Name))
			return
		}
	}
	w.periodics = append(w.periodics, &periodic{w: w, queue: q.WithDefaults(), sched: s, next: next, payload: payload})
}

// tickTimeout bounds each attempt to enqueue a tick, and its recording,
// which shutdown waits for.
const tickTimeout = 10 * time.Second

// Lease contest backoff: a failed AcquireLease waits this long, doubling
// up to leaseRetryMax, before it tries again.
const (
	leaseRetryMin = 100 * time.Millisecond
	leaseRetryMax = 5 * time.Second
)

// run contends for the schedule's lease until ctx ends, firing ticks
// whenever it holds it. It returns an error only when the backend was
// closed.
func (p *periodic) run(ctx context.Context, leaser Leaser) error {
	wait := leaseRetryMin
	for {
		lease, err := leaser.AcquireLease(ctx, leasePrefix+p.sched.Name)
		if ctx.Err() != nil {
			if err == nil {
				_ = lease.Release()
			}
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return fmt.Errorf("schedule %q: %w", p.sched.Name, err)
			}
			p.w.log.Error("queuey: cannot contend for the schedule's lease; trying again", "schedule", p.sched.Name, "error", err, "after", wait)
			if !syncx.Sleep(ctx, wait) {
				return nil
			}
			wait = min(wait*2, leaseRetryMax)
			continue
		}
		wait = leaseRetryMin
		p.w.log.Info("queuey: this worker fires the schedule's ticks", "schedule", p.sched.Name, "spec", p.sched.Spec)
		p.lead(ctx, lease)
		if err := lease.Release(); err != nil {
			p.w.log.Warn("queuey: release the schedule's lease", "schedule", p.sched.Name, "error", err)
		}
	}
}

// lead fires the schedule's ticks while lease is held and ctx lasts.
func (p *periodic) lead(ctx context.Context, lease HeldLease) {
	clk := clockOf(p.w.backend)
	last := lease.Mark()
	if last.IsZero() {
		last = clk.Now().UTC() // the schedule's first run: no tick is past
	}
	recovering := true
	for {
		t, n := latest(p.next, last, clk.Now())
		// A tick is missed when several passed since the last, or when
		// one passed while no scheduler held the lease.
		missed := n > 1 || n == 1 && recovering
		recovering = false
		switch {
		case n == 0:
		case missed && p.sched.Missed == MissedSkip:
			p.w.log.Info("queuey: missed ticks skipped", "schedule", p.sched.Name, "latest", t)
			last = t
		case missed && mergesIntoNext(t, p.next(t), clk.Now()):
			p.w.log.Info("queuey: missed tick left to the next, which is due soon", "schedule", p.sched.Name, "missed", t, "next", p.next(t))
			last = t
		default:
			if !p.fire(ctx, lease, t) {
				return
			}
			last = t
		}
		at := p.next(last)
		if at.IsZero() {
			p.w.log.Warn("queuey: schedule has no tick within five years", "schedule", p.sched.Name, "spec", p.sched.Spec)
			p.w.idleSchedules.Add(1)
			defer p.w.idleSchedules.Add(-1)
			select {
			case <-ctx.Done():
			case <-lease.Lost():
			}
			return
		}
		// The schedule counts as waiting once its timer is set, until
		// the timer fires, in the timer's own call: a test that moves a
		// fake clock sees the tick under way once the move is done
		// (Worker.idleSchedules).
		due := make(chan struct{})
		timer := clk.AfterFunc(at.Sub(clk.Now()), func() {
			p.w.idleSchedules.Add(-1)
			close(due)
		})
		p.w.idleSchedules.Add(1)
		select {
		case <-ctx.Done():
		case <-lease.Lost():
		case <-due:
			continue
		}
		if timer.Stop() {
			p.w.idleSchedules.Add(-1)
		}
		return
	}
}

// fire enqueues tick t's job, then records t with the lease, trying the
// enqueue again with backoff until it succeeds. It reports false when the
// lease was lost, ctx ended or recording failed: the caller then lets
// the lease go.
func (p *periodic) fire(ctx context.Context, lease HeldLease, t time.Time) bool {
	producer := p.w.producer
	id := tickID(p.sched.Name, t)
	// A tick begun is finished, shutdown or not: an enqueue cut off
	// midway may be stored all the same, and then must be recorded, or
	// the next scheduler enqueues it again. So each step runs on a
	// context of its own, bounded but not ended by shutdown.
	step := func(fn func(ctx context.Context) error) error {
		stepCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tickTimeout)
		defer cancel()
		return fn(stepCtx)
	}
	wait := leaseRetryMin
	for {
		payload, err := p.payload()
		if err == nil {
			err = step(func(ctx context.Context) error {
				_, err := producer.enqueuePayload(ctx, p.queue, payload, WithID(id), withTick(t))
				return err
			})
		}
		if err == nil {
			break
		}
		p.w.log.Error("queuey: cannot enqueue the schedule's tick; trying again", "schedule", p.sched.Name, "job_id", id, "error", err, "after", wait)
		select {
		case <-ctx.Done():
			return false
		case <-lease.Lost():
			return false
		case <-time.After(wait):
		}
		wait = min(wait*2, leaseRetryMax)
	}
	if err := step(func(ctx context.Context) error { return lease.Advance(ctx, t) }); err != nil {
		p.w.log.Error("queuey: cannot record the schedule's tick; another scheduler may enqueue it again, with the same ID", "schedule", p.sched.Name, "job_id", id, "error", err)
		return false
	}
	p.w.log.Debug("queuey: tick enqueued", "schedule", p.sched.Name, "job_id", id)
	return true
}

// missedMergeMax bounds how soon the next tick must be due for a missed
// tick to be left to it (see mergesIntoNext).
const missedMergeMax = time.Minute

// mergesIntoNext reports whether missed, the latest missed tick, found at
// now, is left to next, the tick after it, rather than fired: when next is
// due within half the time between the two (now is nearer to next than to
// missed) and within missedMergeMax. Fired, it would run back to back with
// next for what is one catch-up; a scheduler back well before next fires
// it at once.
func mergesIntoNext(missed, next, now time.Time) bool {
	if next.IsZero() {
		return false
	}
	wait := next.Sub(now)
	return wait <= next.Sub(missed)/2 && wait <= missedMergeMax
}

// latest returns the latest tick after last and at or before now, and how
// many ticks passed: 0, 1, or 2 for more than one.
func latest(next func(time.Time) time.Time, last, now time.Time) (time.Time, int) {
	t := next(last)
	if t.IsZero() || t.After(now) {
		return time.Time{}, 0
	}
	n := 1
	for range maxCatchUp {
		u := next(t)
		if u.IsZero() || u.After(now) {
			break
		}
		t, n = u, 2
	}
	return t, n
}

// leaser returns w's backend as a Leaser when periodics need one.
func (w *Worker) leaser(periodics []*periodic) (Leaser, error) {
	if len(periodics) == 0 {
		return nil, nil
	}
	l, ok := w.backend.(Leaser)
	if !ok {
		return nil, fmt.Errorf("%w: schedule %q: the backend (%T) cannot elect a scheduler: it does not implement runtime.Leaser", ErrInvalidOption, periodics[0].sched.Name, w.backend)
	}
	return l, nil
}
