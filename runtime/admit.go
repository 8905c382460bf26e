package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/names"
)

// RuleError is the error of a job that breaks a rule of the queue it came
// from, as the worker registered it: the queue's config, not the job, is
// the authority on its rules, whoever produced the job. The job is
// dead-lettered at once, and the handler does not run. Rule says which
// rule and how the job breaks it.
type RuleError struct {
	Queue string // the queue the job came from
	ID    string // the job's ID
	Rule  string // what is wrong, such as "priority 9, above the queue's max_priority=3"
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("job %q on queue %q: %s: dead-lettered without running the handler", errs.Clip(e.ID), e.Queue, e.Rule)
}

// MaxTickAhead is how far ahead of the worker's clock the tick of a job
// carrying HeaderTick may be: a schedule never fires a tick before its
// time, so a later one was not fired by a scheduler whose clock is within
// this of the worker's.
const MaxTickAhead = time.Minute

// checkJob returns h behind the checks of each job against q, the queue
// as w registered it (defaulted), before h runs (see admit).
func (w *Worker) checkJob(q QueueConfig, h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, env *Envelope) error {
		if err := w.admit(&q, env); err != nil {
			return err
		}
		return h(ctx, env)
	}
}

// admit checks env, taken from q, against q's rules, whatever produced
// it:
//
//   - its kind is q's (a *KindError otherwise);
//   - its queue field names q: a job carries the name of the queue it is
//     published to;
//   - its priority is at most q's max_priority, as a producer's enqueue
//     refuses;
//   - a HeaderTick it carries is shaped as a schedule shapes its ticks
//     (forgedTick): a job enqueued with another ID, or with a tick ahead
//     of the worker's clock, did not come from a schedule.
//
// q's MaxAttempts is the job's, whatever its envelope says: the worker
// sets it before the run (queueRunner.process).
func (w *Worker) admit(q *QueueConfig, env *Envelope) error {
	if q.Kind != "" && env.Kind != q.Kind {
		return &KindError{Queue: q.Name, Got: env.Kind, Want: q.Kind}
	}
	refuse := func(format string, args ...any) error {
		return &RuleError{Queue: q.Name, ID: env.ID, Rule: fmt.Sprintf(format, args...)}
	}
	if env.Queue != q.Name {
		return refuse("its queue field names queue %q: a job names the queue it is published to", errs.Clip(env.Queue))
	}
	if top := q.topPriority(); env.Priority > top {
		return refuse("priority %d, above the queue's %s", env.Priority, describePriority(q.MaxPriority))
	}
	if tick, ok := env.Headers[HeaderTick]; ok {
		if why := w.forgedTick(env.ID, tick); why != "" {
			return refuse("header %q: %s", HeaderTick, why)
		}
	}
	return nil
}

// forgedTick says why a job with ID id carrying HeaderTick tick was not
// shaped as a schedule shapes its ticks, or "" when it was: tick is a
// time in RFC 3339, in UTC, to the second; id is a schedule's name, "@",
// and tick; and tick is not later than the worker's clock by more than
// MaxTickAhead.
func (w *Worker) forgedTick(id, tick string) string {
	t, err := time.Parse(time.RFC3339, tick)
	if err != nil || t.UTC().Format(time.RFC3339) != tick {
		return fmt.Sprintf("%q is not a tick's time (RFC 3339 in UTC, to the second, as a schedule writes it); only a schedule sets it", errs.Clip(tick))
	}
	name, ok := strings.CutSuffix(id, "@"+tick)
	if !ok || len(name) > MaxScheduleNameLen || !names.Valid(name) {
		return fmt.Sprintf("the job's ID is not <schedule name>@%s, the ID a schedule gives its tick's job; only a schedule sets it", tick)
	}
	if now := clockOf(w.backend).Now(); t.After(now.Add(MaxTickAhead)) {
		return fmt.Sprintf("tick %s is later than the worker's clock (%s) by more than %v: a schedule never fires a tick before its time", tick, now.UTC().Format(time.RFC3339), MaxTickAhead)
	}
	return ""
}
