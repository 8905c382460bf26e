package backendtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// testAdminPurgeDeleteQueue: PurgeQueue deletes a queue's ready jobs and
// counts them, leaving its dead letters; DeleteQueue refuses while a
// worker consumes it, then deletes it with its waits, counting the jobs
// of each queue it deleted (or, where the hold queues cannot be listed,
// deletes nothing); both fail on a queue that does not exist.
func testAdminPurgeDeleteQueue(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	qa, ok := h.b.(admin.QueueAdmin)
	if !ok {
		t.Skip("backend does not implement admin.QueueAdmin")
	}
	h.killJobs(1)
	for i := range 3 {
		if _, err := runtime.Enqueue(ctxT(t), h.p, h.q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := qa.PurgeQueue(ctxT(t), h.q.Name); err != nil || n != 3 {
		t.Fatalf("PurgeQueue = %d, %v; want 3 ready jobs purged", n, err)
	}
	if st := h.stats(); st.Ready != 0 || st.Dead != 1 {
		t.Errorf("after PurgeQueue: %d ready, %d dead; want 0 and the 1 dead letter kept", st.Ready, st.Dead)
	}
	stop := h.start(func(ctx context.Context, j job) error { return nil })
	eventually(t, "a consumer attached", func() bool { return h.stats().Consumers > 0 })
	if _, err := qa.DeleteQueue(ctxT(t), h.q.Name, admin.DeleteQueueOptions{}); !errors.Is(err, admin.ErrQueueInUse) {
		t.Errorf("DeleteQueue with a consumer attached = %v, want ErrQueueInUse", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no consumer attached", func() bool { return h.stats().Consumers == 0 })
	res, err := qa.DeleteQueue(ctxT(t), h.q.Name, admin.DeleteQueueOptions{WithWaits: true})
	deleted := res.Deleted
	if errors.Is(err, admin.ErrCannotList) {
		// Hold queues cannot be found (RabbitMQ without its management
		// API): nothing may be deleted then.
		if len(deleted) != 0 {
			t.Fatalf("DeleteQueue --with-waits that cannot list = %+v, %v; want nothing deleted", deleted, err)
		}
		if st := h.stats(); st.Dead != 1 {
			t.Fatalf("after a refused DeleteQueue: %d dead; want the 1 dead letter kept", st.Dead)
		}
		if res, err = qa.DeleteQueue(ctxT(t), h.q.Name, admin.DeleteQueueOptions{}); err != nil || len(res.Deleted) != 1 {
			t.Fatalf("DeleteQueue = %+v, %v; want the queue", res, err)
		}
		return
	}
	if err != nil || len(deleted) < 2 || deleted[0] != (admin.DeletedQueue{Name: h.q.Name, Jobs: 0}) ||
		!slices.ContainsFunc(deleted, func(d admin.DeletedQueue) bool { return d.Jobs == 1 }) {
		t.Fatalf("DeleteQueue --with-waits = %+v, %v; want the queue, then its dead letters with 1 job", deleted, err)
	}
	if _, err := qa.PurgeQueue(ctxT(t), h.q.Name); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("PurgeQueue of a deleted queue = %v, want ErrUnknownQueue", err)
	}
	if _, err := qa.DeleteQueue(ctxT(t), h.q.Name, admin.DeleteQueueOptions{}); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("DeleteQueue of a deleted queue = %v, want ErrUnknownQueue", err)
	}
}
