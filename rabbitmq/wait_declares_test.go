package rabbitmq_test

import (
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestHoldQueueDeletedBetweenWaits deletes a hold queue behind the
// backend's back right after a wait used it: the next wait, whose publish
// follows a declare of the hold queue, finds it there again.
func TestHoldQueueDeletedBetweenWaits(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".deferred.60000")
	hold := q.Name + ".deferred.60000"
	raw := rawChannel(t)
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithDelay(time.Minute)); err != nil {
		t.Fatalf("first wait: %v", err)
	}
	if n, err := raw.QueueDelete(hold, false, false, false); err != nil || n != 1 {
		t.Fatalf("delete hold queue %q: %d messages, %v; want 1, nil", hold, n, err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 2}, runtime.WithDelay(time.Minute)); err != nil {
		t.Fatalf("wait onto the deleted hold queue: %v", err)
	}
	if n := queueLen(t, raw, hold); n != 1 {
		t.Errorf("hold queue %q holds %d jobs, want 1", hold, n)
	}
}
