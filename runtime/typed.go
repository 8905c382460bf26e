package runtime

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/queuey/queuey/internal/msgpack/mpfit"
)

// Job names a queue together with the type of its jobs, T: generated
// code declares one per job type (XJob, beside XQueue), for tests and
// typed helpers that would otherwise be told the type again, such as
// those of package queueytest.
type Job[T any] struct {
	// Queue is the queue of T's jobs.
	Queue QueueConfig
}

// KindOf returns the kind of job type T, as the generator writes it into
// QueueConfig.Kind: its package's name and its own, "emails.SendEmail".
func KindOf[T any]() string { return reflect.TypeFor[T]().String() }

// checkJobType returns q with its kind, KindOf[T] when q names none, or
// ErrJobType when T is not q's job type.
func checkJobType[T any](q *QueueConfig) error {
	k := KindOf[T]()
	switch q.Kind {
	case k:
	case "":
		q.Kind = k
	default:
		return fmt.Errorf("%w: a %s given for queue %q, whose kind is %q", ErrJobType, k, q.Name, q.Kind)
	}
	return nil
}

// Enqueue encodes job with msgpack and enqueues it onto q. Generated
// EnqueueX functions call it.
func Enqueue[T any](ctx context.Context, p *Producer, q QueueConfig, job T, opts ...EnqueueOption) (string, error) {
	if err := checkJobType[T](&q); err != nil {
		return "", fmt.Errorf("enqueue onto %q: %w", q.Name, err)
	}
	payload, err := encodePayload(&job)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", q.Kind, err)
	}
	return p.enqueue(ctx, q, payload, true, opts)
}

// EnqueueMany encodes each job with msgpack and enqueues them onto q, with
// the same options, keeping many publishes in flight where the backend can.
// It returns every job's ID in order and a *BatchError naming the jobs that
// were not enqueued, if any. Generated EnqueueManyX functions call it.
func EnqueueMany[T any](ctx context.Context, p *Producer, q QueueConfig, jobs []T, opts ...EnqueueOption) ([]string, error) {
	if err := checkJobType[T](&q); err != nil {
		return nil, fmt.Errorf("enqueue onto %q: %w", q.Name, err)
	}
	payloads := make([][]byte, len(jobs))
	for i := range jobs {
		payload, err := encodePayload(&jobs[i])
		if err != nil {
			return nil, fmt.Errorf("encode %s #%d: %w", q.Kind, i, err)
		}
		payloads[i] = payload
	}
	return p.enqueuePayloads(ctx, q, payloads, opts...)
}

// Handle registers h as the handler of q's jobs on w. Each payload is
// decoded into a T; one that does not decode, or holds a number that does
// not fit its field (300 for an int8), is dead-lettered at once with a
// DecodeError naming the field. When q has a Schedule, w also enqueues a zero T at each of
// its ticks (see Periodic). Generated HandleX functions call it.
//
// A bad config or a queue handled twice (naming both job types when their
// kinds differ) is reported by Run. Each job is checked against q before
// h runs: a job of another kind fails with a KindError, one that breaks
// another of q's rules with a RuleError, and either is dead-lettered (see
// RuleError). q's MaxAttempts is every job's, whatever its envelope says.
// Handling after Run has started is a programming error and panics, as
// nothing could report it.
func Handle[T any](w *Worker, q QueueConfig, h func(ctx context.Context, job T) error) {
	if err := checkJobType[T](&q); err != nil {
		w.refuse(fmt.Errorf("handler of queue %q: %w", q.Name, err))
		return
	}
	if q.Schedule != "" && q.Validate() == nil {
		Periodic(w, q, Schedule{Spec: q.Schedule, Missed: q.Missed}, func() T { var zero T; return zero })
	}
	// Each job decodes into a T from the pool and is handed over by value,
	// so the T a decode needs is not allocated once per job.
	jobs := sync.Pool{New: func() any { return new(T) }}
	fit := mpfit.For(reflect.TypeFor[T]())
	keyOf, err := keyReader(q, func(payload []byte) (*T, func(), error) {
		jp := jobs.Get().(*T)
		return jp, func() { var zero T; *jp = zero; jobs.Put(jp) }, decodePayload(payload, jp, fit)
	})
	if err != nil {
		w.refuse(err)
		return
	}
	w.register(q, func(ctx context.Context, env *Envelope) error {
		var zero T
		jp := jobs.Get().(*T)
		err := decodePayload(env.Payload, jp, fit)
		job := *jp
		*jp = zero // the pool keeps no reference into the job
		jobs.Put(jp)
		if err != nil {
			return decodeError(&q, env, fit, err)
		}
		return h(ctx, job)
	}, keyOf)
}
