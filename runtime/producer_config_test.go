package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// TestEnqueueRefusesAConfigThatDiffersFromTheDeclaredOne: an enqueue whose
// config differs from the one its producer declared under that name, in a
// field the enqueue depends on, is refused with ErrQueueMismatch naming the
// field and both values, and nothing is published; the declared config is
// not put in its place. Fields only consumers read may differ.
func TestEnqueueRefusesAConfigThatDiffersFromTheDeclaredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := runtime.NewMemoryBackend()
	declared := runtime.QueueConfig{Name: "mismatch", Kind: runtime.KindOf[string](), MaxPriority: 5, MaxAttempts: 3}
	p, err := runtime.NewProducer(ctx, b, declared)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field, want string
		change      func(*runtime.QueueConfig)
	}{
		{"MaxPriority", "MaxPriority 9 here, 5 declared", func(q *runtime.QueueConfig) { q.MaxPriority = 9 }},
		{"MaxAttempts", "MaxAttempts 7 here, 3 declared", func(q *runtime.QueueConfig) { q.MaxAttempts = 7 }},
		{"QueueType", `QueueType "quorum" here, "classic" declared`, func(q *runtime.QueueConfig) { q.QueueType = runtime.QueueQuorum }},
		{"Delay", `Delay "plugin" here, "" declared`, func(q *runtime.QueueConfig) { q.Delay = runtime.DelayPlugin }},
	} {
		q := declared
		tc.change(&q)
		_, err := runtime.Enqueue(ctx, p, q, "job")
		if !errors.Is(err, runtime.ErrQueueMismatch) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("enqueue with another %s = %v, want ErrQueueMismatch saying %q", tc.field, err, tc.want)
		}
		if _, err := runtime.EnqueueMany(ctx, p, q, []string{"a", "b"}); !errors.Is(err, runtime.ErrQueueMismatch) {
			t.Errorf("enqueue many with another %s = %v, want ErrQueueMismatch", tc.field, err)
		}
	}
	if n, err := b.Ready(ctx, declared.Name); err != nil || n != 0 {
		t.Fatalf("ready after refused enqueues = %d, %v; want 0: a refused enqueue was published", n, err)
	}
	consumerSide := declared
	consumerSide.Prefetch, consumerSide.Timeout = 50, 1
	if _, err := runtime.Enqueue(ctx, p, consumerSide, "job"); err != nil {
		t.Fatalf("enqueue with other consumer-only fields: %v", err)
	}
	if n, err := b.Ready(ctx, declared.Name); err != nil || n != 1 {
		t.Fatalf("ready = %d, %v; want 1", n, err)
	}
}
