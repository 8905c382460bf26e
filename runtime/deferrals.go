package runtime

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// HeaderDeferrals is the job header that counts a job's deferrals
// (handler returns of Defer) so far, in decimal; a job without it has none.
// The worker sets it on each deferral and dead-letters the job once the
// count would pass its WithMaxDeferrals.
const HeaderDeferrals = "queuey-deferrals"

// DefaultMaxDeferrals is how many times a worker defers one job, unless
// WithMaxDeferrals says otherwise, before it dead-letters it: a handler
// that defers the job each run (a 429 that never ends) would otherwise
// cycle it forever.
const DefaultMaxDeferrals = 100

// WithMaxDeferrals sets how many times one job may be deferred
// (runtime.Defer) over its life before the worker dead-letters it instead,
// with a reason that says so; the count travels with the job in
// HeaderDeferrals. Zero means no cap; less than zero, DefaultMaxDeferrals.
func WithMaxDeferrals(n int) WorkerOption {
	return func(w *Worker) {
		if n < 0 {
			n = DefaultMaxDeferrals
		}
		w.maxDeferrals = n
	}
}

// deferrals is the count in env's HeaderDeferrals; 0 when it has none or
// it is not a count.
func deferrals(env *Envelope) int {
	n, err := strconv.Atoi(env.Headers[HeaderDeferrals])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// nextDeferral returns the envelope a deferral of env publishes, its count
// raised; or, when that would pass the worker's cap, the error the job is
// dead-lettered with.
func (c *queueRunner) nextDeferral(env *Envelope, delay time.Duration, herr error) (*Envelope, error) {
	n := deferrals(env) + 1
	if max := c.w.maxDeferrals; max > 0 && n > max {
		return nil, fmt.Errorf("deferred %d times, the most the worker allows (runtime.WithMaxDeferrals), and its run asked for another wait of %v (%w)", max, delay, herr)
	}
	next := env.Clone()
	if next.Headers == nil {
		next.Headers = make(map[string]string, 1)
	}
	next.Headers[HeaderDeferrals] = strconv.Itoa(n)
	return next, nil
}

// deferLogEvery is how often, at most, a queue's deferrals are logged at
// info level: the first at once, then one line for those since, so that a
// burst of deferrals (a rate limit hit by every job) logs a line per
// queue every deferLogEvery, not one per job. Each is logged at debug
// level too.
const deferLogEvery = 30 * time.Second

// deferLog counts a queue's deferrals between two info lines.
type deferLog struct {
	mu    sync.Mutex
	last  time.Time
	since int
}

// deferred counts one deferral and reports whether to log now, with how
// many deferrals the line stands for.
func (l *deferLog) deferred(now time.Time) (n int, log bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.since++
	if !l.last.IsZero() && now.Sub(l.last) < deferLogEvery {
		return 0, false
	}
	n, l.since, l.last = l.since, 0, now
	return n, true
}

// loggedDeferral logs a deferral of env: at debug level always, at info
// level at most once every deferLogEvery per queue, with the count since
// the last such line.
func (c *queueRunner) loggedDeferral(ctx context.Context, env *Envelope, delay time.Duration, count int) {
	log := c.w.log
	log.DebugContext(ctx, "queuey: job deferred", "queue", c.queue.Name, "job_id", env.ID, "delay", delay, "deferrals", count)
	if n, ok := c.deferLog.deferred(time.Now()); ok {
		log.InfoContext(ctx, "queuey: jobs deferred", "queue", c.queue.Name, "deferred", n, "job_id", env.ID, "delay", delay, "deferrals", count, "max_deferrals", c.w.maxDeferrals)
	}
}
