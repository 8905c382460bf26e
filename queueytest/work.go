package queueytest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// WorkOption configures Work.
type WorkOption func(*work)

type work struct {
	attempt, maxAttempts int
}

// Attempt makes Work run the job as its run number n (1-based) of max:
// a failure at n < max is retried, at n == max dead-lettered. Without
// Attempt, Work runs attempt 1 of the queue's max_attempts.
func Attempt(n, max int) WorkOption {
	return func(w *work) { w.attempt, w.maxAttempts = n, max }
}

// workSeq numbers the jobs of Work.
var workSeq atomic.Int64

// Work runs job through w's handler of its queue (emails.SendEmailJob,
// say) as w runs a delivery of it (the
// kind check, w's middleware and observers, the queue's timeout, the
// handler's result turned into an outcome) and returns what became of
// the run: Done, Retried or Deferred with the wait the backend would
// hold it for, or DeadLettered with its reason. No backend holds the job,
// and w is not started: Work one worker as often as you like, then Drain
// it. The job gets the ID "work-" and a number. It fails t when w has no
// handler for the queue, one of its registrations was refused, or the run
// was not settled.
func Work[T any](t testing.TB, w *runtime.Worker, queue runtime.Job[T], job T, opts ...WorkOption) Outcome {
	t.Helper()
	q := queue.Queue
	cfg := work{attempt: 1, maxAttempts: q.WithDefaults().MaxAttempts}
	for _, opt := range opts {
		opt(&cfg)
	}
	payload, err := msgpack.Marshal(&job)
	if err != nil {
		t.Fatalf("queueytest: encode %T: %v", job, err)
	}
	env := &runtime.Envelope{
		ID:          fmt.Sprint("work-", workSeq.Add(1)),
		Queue:       q.Name,
		Kind:        q.Kind,
		Payload:     payload,
		Attempt:     cfg.attempt,
		MaxAttempts: cfg.maxAttempts,
		EnqueuedAt:  time.Now(),
	}
	s, err := runtime.Hooks(hooks.K).Run(context.Background(), w, q.Name, env)
	if err != nil {
		t.Fatalf("queueytest: %v", err)
	}
	o := Outcome{ID: env.ID, Queue: env.Queue, Kind: env.Kind, Attempt: env.Attempt, Delay: s.Delay, Reason: s.Reason}
	switch s.Outcome {
	case hooks.Acked:
		o.Result = Done
	case hooks.Retried:
		o.Result = Retried
	case hooks.Deferred:
		o.Result = Deferred
	case hooks.DeadLettered:
		o.Result = DeadLettered
	case hooks.Requeued:
		o.Result = Requeued
	default:
		t.Fatalf("queueytest: the run of job %s was not settled", env.ID)
	}
	return o
}
