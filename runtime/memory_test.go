package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

// The memory backend is every operators' capability of package admin.
var (
	_ admin.Inspector       = (*runtime.MemoryBackend)(nil)
	_ admin.DeadLetterAdmin = (*runtime.MemoryBackend)(nil)
	_ admin.LadderAdmin     = (*runtime.MemoryBackend)(nil)
	_ admin.Pauser          = (*runtime.MemoryBackend)(nil)
	_ admin.QueueAdmin      = (*runtime.MemoryBackend)(nil)
	_ admin.LimitReader     = (*runtime.MemoryBackend)(nil)
	_ admin.ReadyCounter    = (*runtime.MemoryBackend)(nil)
)

func TestMemoryBackendConformance(t *testing.T) {
	t.Parallel()
	f := backendtest.Features{
		PublishRaw: func(ctx context.Context, b runtime.Backend, queue string, body []byte) error {
			return runtime.Hooks(hooks.K).PublishRaw(ctx, b.(*runtime.MemoryBackend), queue, body)
		},
	}
	backendtest.Run(t, f, func(t *testing.T) runtime.Backend {
		b := quietMemory()
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}

// TestMemoryDeclaresDefaultPriority: a QueueConfig literal without
// MaxPriority declares DefaultMaxPriority, as DefaultQueueConfig does, and
// NoPriority declares none; the two are different queues.
func TestMemoryDeclaresDefaultPriority(t *testing.T) {
	t.Parallel()
	b := runtime.NewMemoryBackend()
	defer b.Close()
	ctx := context.Background()
	if err := b.Declare(ctx, runtime.QueueConfig{Name: "literal"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Declare(ctx, runtime.DefaultQueueConfig("literal")); err != nil {
		t.Errorf("DefaultQueueConfig over a literal: %v", err)
	}
	err := b.Declare(ctx, runtime.QueueConfig{Name: "literal", MaxPriority: runtime.NoPriority})
	if !errors.Is(err, runtime.ErrQueueMismatch) || !strings.Contains(err.Error(), "max_priority=10") || !strings.Contains(err.Error(), "max_priority=0 (NoPriority)") {
		t.Errorf("NoPriority over a literal = %v, want ErrQueueMismatch naming max_priority=10 and max_priority=0 (NoPriority)", err)
	}

	none := runtime.QueueConfig{Name: "none", MaxPriority: runtime.NoPriority}
	p, err := runtime.NewProducer(ctx, b, none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, none, ping{}, runtime.WithPriority(0)); err != nil {
		t.Errorf("priority 0 on a queue of NoPriority: %v", err)
	}
	_, err = runtime.Enqueue(ctx, p, none, ping{}, runtime.WithPriority(1))
	if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), "want 0: the queue declares no priority") {
		t.Errorf("priority 1 on a queue of NoPriority = %v, want ErrInvalidOption saying the queue declares no priority", err)
	}
}

// TestMemoryDeleteQueue: the memory backend keeps dead letters and waits
// inside their queue, so a delete without WithWaits of a queue holding a
// wait is refused with nothing deleted; with WithWaits the queue, its dead
// letters and its waits go, counted; a consumer refuses the delete unless
// forced, and a forced delete ends it with an error.
func TestMemoryDeleteQueue(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	ctx := context.Background()
	q := runtime.DefaultQueueConfig("del")
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := runtime.Enqueue(ctx, p, q, ping{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runtime.Enqueue(ctx, p, q, ping{}, runtime.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	res, err := b.DeleteQueue(ctx, q.Name, admin.DeleteQueueOptions{})
	if deleted := res.Deleted; err == nil || deleted != nil || !strings.Contains(err.Error(), "dead letters: 0, waits: 1; delete it with its waits") {
		t.Fatalf("DeleteQueue without waits of a queue with a wait = %+v, %v; want a refusal naming the wait", res, err)
	}
	if n, err := b.Ready(ctx, q.Name); n != 2 || err != nil {
		t.Fatalf("after a refused delete: Ready = %d, %v; want 2", n, err)
	}
	res, err = b.DeleteQueue(ctx, q.Name, admin.DeleteQueueOptions{WithWaits: true})
	deleted := res.Deleted
	want := []admin.DeletedQueue{{Name: "del", Jobs: 2}, {Name: "del.dead", Jobs: 0}, {Name: "del deferred timers", Jobs: 1}}
	if err != nil || !slices.Equal(deleted, want) {
		t.Fatalf("DeleteQueue with waits = %+v, %v; want %+v", deleted, err, want)
	}
	if _, err := b.Ready(ctx, q.Name); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Fatalf("Ready of a deleted queue = %v, want ErrUnknownQueue", err)
	}
	if st, err := b.QueueStats(ctx, admin.Queue{Name: "other"}); err == nil {
		t.Fatalf("QueueStats of an undeclared queue = %+v, want an error", st)
	}

	if err := b.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Consume(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteQueue(ctx, q.Name, admin.DeleteQueueOptions{}); !errors.Is(err, admin.ErrQueueInUse) {
		t.Fatalf("DeleteQueue with a consumer = %v, want ErrQueueInUse", err)
	}
	if res, err := b.DeleteQueue(ctx, q.Name, admin.DeleteQueueOptions{Force: true}); err != nil || len(res.Deleted) != 1 {
		t.Fatalf("forced DeleteQueue = %+v, %v; want the queue", res, err)
	}
	select {
	case _, open := <-sub.Deliveries():
		if open {
			t.Fatal("a delivery from a deleted queue")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the consumer of a deleted queue did not end")
	}
	if err := sub.Err(); err == nil || !strings.Contains(err.Error(), "the queue was deleted") {
		t.Errorf("consumer's Err after a forced delete = %v, want one saying the queue was deleted", err)
	}
	_ = sub.Close()
}

// TestMemoryPurgeQueue: PurgeQueue removes the ready jobs, counted, and
// leaves waits; an unknown queue is ErrUnknownQueue.
func TestMemoryPurgeQueue(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	ctx := context.Background()
	q := runtime.DefaultQueueConfig("purge")
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, 0, 0, time.Hour} {
		if _, err := runtime.Enqueue(ctx, p, q, ping{}, runtime.WithDelay(d)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.PurgeQueue(ctx, q.Name); n != 3 || err != nil {
		t.Fatalf("PurgeQueue = %d, %v; want 3", n, err)
	}
	st, err := b.QueueStats(ctx, admin.Queue{Name: q.Name})
	if err != nil || st[0].Ready != 0 || st[0].Waiting != 1 {
		t.Fatalf("after PurgeQueue: %+v, %v; want 0 ready and the wait kept", st, err)
	}
	if _, err := b.PurgeQueue(ctx, "nosuch"); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("PurgeQueue of an unknown queue = %v, want ErrUnknownQueue", err)
	}
}

// TestMemoryLadderWaits: the memory backend holds the waits of a
// delay=ladder queue as any other, with its own timers.
func TestMemoryLadderWaits(t *testing.T) {
	b := quietMemory()
	defer b.Close()
	ctx := context.Background()
	q := runtime.DefaultQueueConfig("ladder")
	q.Delay = runtime.DelayLadder
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, q, ping{}, runtime.WithDelay(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, func() bool {
		n, err := b.Ready(ctx, q.Name)
		return err == nil && n == 1
	}, "the wait back on its queue")
}
