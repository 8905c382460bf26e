package runtime

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// An orphaned run is a handler still running when its subscription ended
// under it: the broker closed the channel (RabbitMQ's consumer_timeout, a
// lost connection), so the run's outcome can no longer be settled on the
// delivery it came with, and the broker delivers the job again. The runner
// subscribes again at once, and orphaned runs give their concurrency slots
// back, so the queue keeps a consumer with its full concurrency however
// long they run.
//
// The broker's copy of an orphaned job that comes to this runner is never
// run while the orphan runs: it is deferred (orphanRecheck, no attempt
// counted) until the orphan has returned, and then settled with the
// orphan's outcome, at the orphan's attempt, as if the orphan had
// settled it; observers hear of that outcome then, once, on the orphan's
// run. The backend does not count the copy's redelivery as an attempt
// either (nor dead-letter it past max_attempts): the runner's
// subscriptions ask it (OrphanCheck, orphanage.has). A copy that goes to
// another worker runs there.

// orphanRecheck is how long the broker's copy of an orphaned job waits,
// deferred, before it is looked at again.
const orphanRecheck = 2 * time.Second

// orphanKeep is how long an orphan's outcome waits for the broker's copy
// after the orphan returned; past it, the copy is taken to have gone to
// another worker, and the run is reported abandoned.
const orphanKeep = 10 * time.Minute

// errOrphaned is the settle error observers see on an orphaned run whose
// outcome never reached the broker's copy.
var errOrphaned = errors.New("the consumer was closed under the running handler (the broker's consumer_timeout, or a lost connection); its outcome found no copy of the job to settle")

// orphanKey names a job across its deliveries: its ID and enqueue time.
type orphanKey struct {
	id  string
	enq int64
}

func keyOf(env *Envelope) orphanKey { return orphanKey{env.ID, env.EnqueuedAt.UnixNano()} }

// orphan is one orphaned run.
type orphan struct {
	attempt int // the orphan's attempt, at which its outcome settles the copy
	done    bool
	herr    error       // the handler's result, once done
	run     observedRun // the orphan's run, reported when its copy settles
	ended   time.Time
}

// orphanage holds a runner's orphaned runs by job. A job's ID is a label,
// not unique: two jobs can share an ID and an enqueue time, and so one
// key. A key holds every orphan recorded under it, and each copy that
// comes settles with the outcome of one of them, the first to have
// returned; the copies of such jobs are alike, so which settles with which
// does not matter.
type orphanage struct {
	n  atomic.Int32 // len(m): most jobs find it 0 without the lock
	mu sync.Mutex
	m  map[orphanKey][]*orphan
}

// add records a run of env orphaned while it runs.
func (o *orphanage) add(env *Envelope) *orphan {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[orphanKey][]*orphan{}
	}
	r := &orphan{attempt: env.Attempt}
	k := keyOf(env)
	o.m[k] = append(o.m[k], r)
	o.n.Store(int32(len(o.m)))
	return r
}

// finish records the orphan's result and its observed run, whose outcome
// the copy's settle reports.
func (o *orphanage) finish(r *orphan, herr error, run *observedRun) {
	o.mu.Lock()
	r.done, r.herr, r.run, r.ended = true, herr, *run, time.Now()
	*run = observedRun{} // reported by the copy, or as abandoned when none comes
	expired := o.expireLocked()
	o.mu.Unlock()
	reportAbandoned(expired)
}

// match returns the orphan env is a copy of, if any: one that returned
// (done) when there is one, which it takes out, so that no other copy
// settles with its outcome too (put it back if the copy cannot be
// settled); else one still running.
func (o *orphanage) match(env *Envelope) (r *orphan, done bool) {
	if o.n.Load() == 0 {
		return nil, false
	}
	o.mu.Lock()
	expired := o.expireLocked()
	defer reportAbandoned(expired)
	defer o.mu.Unlock()
	k := keyOf(env)
	rs := o.m[k]
	if len(rs) == 0 {
		return nil, false
	}
	for i, r := range rs {
		if r.done {
			if rs = slices.Delete(rs, i, i+1); len(rs) > 0 {
				o.m[k] = rs
			} else {
				delete(o.m, k)
			}
			o.n.Store(int32(len(o.m)))
			return r, true
		}
	}
	return rs[0], false
}

// has reports whether env is a job of an orphan the runner holds: an
// OrphanCheck. It calls no observer, so a backend can call it with its
// locks held.
func (o *orphanage) has(env *Envelope) bool {
	if o.n.Load() == 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m[keyOf(env)]) > 0
}

// putBack puts back r, which match took out, when its copy could not be
// settled: the next copy settles with its outcome.
func (o *orphanage) putBack(env *Envelope, r *orphan) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[orphanKey][]*orphan{}
	}
	k := keyOf(env)
	o.m[k] = append(o.m[k], r)
	o.n.Store(int32(len(o.m)))
}

// expireLocked drops, and returns for reportAbandoned, the orphans that
// returned more than orphanKeep ago with no copy come since.
func (o *orphanage) expireLocked() (expired []*orphan) {
	for k, rs := range o.m {
		rs = slices.DeleteFunc(rs, func(r *orphan) bool {
			if r.done && time.Since(r.ended) > orphanKeep {
				expired = append(expired, r)
				return true
			}
			return false
		})
		if len(rs) == 0 {
			delete(o.m, k)
		} else {
			o.m[k] = rs
		}
	}
	o.n.Store(int32(len(o.m)))
	return expired
}

// abandon reports every orphan that returned and is waiting for its copy
// as abandoned: the runner ends, and the copy goes back to the queue.
func (o *orphanage) abandon() {
	o.mu.Lock()
	var done []*orphan
	for k, rs := range o.m {
		for _, r := range rs {
			if r.done {
				done = append(done, r)
			}
		}
		delete(o.m, k)
	}
	o.n.Store(0)
	o.mu.Unlock()
	reportAbandoned(done)
}

// reportAbandoned tells the observers of each of rs, dropped from the
// orphanage, that its outcome settled nothing. It runs without the
// orphanage's lock, which a backend may wait for (has) with its own held:
// observers are the application's code.
func reportAbandoned(rs []*orphan) {
	for _, r := range rs {
		r.run.unsettled(errOrphaned, false, nil)
	}
}

// runSlot is a handler goroutine's current run, which the runner orphans
// when the subscription ends under it. It is registered before the
// goroutine starts, so that no delivery it takes can begin a run
// unnoticed once the subscription ended.
type runSlot struct {
	mu     sync.Mutex
	env    *Envelope // nil between runs
	orphan *orphan   // set when orphaned while running
	// ended says the subscription ended (orphanRuns): no run begins on
	// the slot any more.
	ended bool
	// freed says the goroutine's concurrency slot was given back early,
	// when it was orphaned.
	freed bool
}

// begin records that s runs env. Once the subscription ended it records
// nothing and reports false: env's delivery can no longer be settled, and
// the job is delivered again.
func (s *runSlot) begin(env *Envelope) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.env = env
	return true
}

// end records that s's run returned, and returns its orphan record if it
// was orphaned meanwhile.
func (s *runSlot) end() *orphan {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.orphan
	s.env, s.orphan = nil, nil
	return r
}

// adopt settles the broker's copy d of an orphaned job: deferred again
// while the orphan runs, settled with its outcome once it returned. It
// reports whether d was such a copy.
func (c *queueRunner) adopt(base context.Context, gate *settleGate, d Delivery, env *Envelope) bool {
	r, done := c.orphans.match(env)
	if r == nil {
		return false
	}
	if !gate.enter() {
		if done {
			c.orphans.putBack(env, r) // reported as the runner ends
		}
		return true // shutting down: the copy goes back with the channel
	}
	defer gate.leave()
	env.Attempt = r.attempt
	if !done {
		next := env.Clone()
		if err := d.Defer(base, next, orphanRecheck); err != nil {
			c.w.log.Warn("queuey: could not defer the copy of a job whose run still goes on; it goes back to the queue", "queue", c.queue.Name, "job_id", env.ID, "error", err)
			_ = d.Requeue(base)
		} else {
			c.w.log.Debug("queuey: the broker delivered again a job whose run still goes on here; deferred until it ends", "queue", c.queue.Name, "job_id", env.ID, "delay", orphanRecheck)
		}
		return true
	}
	run := r.run
	if err := c.settle(base, run.ctxOr(base), d, env, r.herr, &run); err != nil {
		c.w.log.Warn("queuey: could not settle the copy of a job with the outcome of its run; it goes back to the queue", "queue", c.queue.Name, "job_id", env.ID, "error", err)
		c.orphans.putBack(env, r)
		_ = d.Requeue(base)
	}
	return true
}

// ctxOr returns the run's context, or base for a run no observer watched.
func (r *observedRun) ctxOr(base context.Context) context.Context {
	if r.ctx != nil {
		return r.ctx
	}
	return base
}

// orphanRuns orphans the runs going on under h, whose subscription ended:
// each is recorded so that the broker's copy of its job is not run while
// it goes on, and gives its concurrency slot back, so that the next
// subscription runs other jobs meanwhile. A handler goroutine whose run
// has not begun yet (it took its delivery, its observers are starting)
// gives its slot back too, and begins no run (see runSlot.begin).
func (h *handlers) orphanRuns() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.runs {
		s.mu.Lock()
		s.ended = true
		if s.env != nil && s.orphan == nil {
			s.orphan = h.c.orphans.add(s.env)
		}
		if !s.freed {
			s.freed = true
			<-h.slots
		}
		s.mu.Unlock()
	}
}

// newRunSlot registers the slot of a handler goroutine.
func (h *handlers) newRunSlot() *runSlot {
	s := &runSlot{}
	h.mu.Lock()
	if h.runs == nil {
		h.runs = map[*runSlot]struct{}{}
	}
	h.runs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// dropRunSlot unregisters s as its goroutine ends, and gives its
// concurrency slot back unless orphanRuns did.
func (h *handlers) dropRunSlot(s *runSlot) {
	h.mu.Lock()
	delete(h.runs, s)
	h.mu.Unlock()
	s.mu.Lock()
	freed := s.freed
	s.freed = true
	s.mu.Unlock()
	if !freed {
		<-h.slots
	}
}
