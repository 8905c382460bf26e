package runtime

import (
	"context"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Enqueue encodes job with msgpack and enqueues it onto q. Generated
// EnqueueX functions call it.
func Enqueue[T any](ctx context.Context, p *Producer, q QueueConfig, job T, opts ...EnqueueOption) (string, error) {
	payload, err := msgpack.Marshal(&job)
	if err != nil {
		return "", fmt.Errorf("encode %s: %w", q.Kind, err)
	}
	return p.EnqueuePayload(ctx, q, payload, opts...)
}

// EnqueueMany encodes each job with msgpack and enqueues them onto q, with
// the same options, keeping many publishes in flight where the backend can.
// It returns every job's ID in order and a *BatchError naming the jobs that
// were not enqueued, if any. Generated EnqueueManyX functions call it.
func EnqueueMany[T any](ctx context.Context, p *Producer, q QueueConfig, jobs []T, opts ...EnqueueOption) ([]string, error) {
	payloads := make([][]byte, len(jobs))
	for i := range jobs {
		payload, err := msgpack.Marshal(&jobs[i])
		if err != nil {
			return nil, fmt.Errorf("encode %s #%d: %w", q.Kind, i, err)
		}
		payloads[i] = payload
	}
	return p.EnqueuePayloads(ctx, q, payloads, opts...)
}

// Handle registers h as the handler of q's jobs on w. Each payload is
// decoded into a T; one that does not decode is dead-lettered at once with a
// DecodeError. Generated HandleX functions call it.
func Handle[T any](w *Worker, q QueueConfig, h func(ctx context.Context, job T) error) {
	w.Register(q, func(ctx context.Context, env *Envelope) error {
		var job T
		if err := msgpack.Unmarshal(env.Payload, &job); err != nil {
			return &DecodeError{Kind: q.Kind, Err: err}
		}
		return h(ctx, job)
	})
}
