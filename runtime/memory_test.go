package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/internal/rawpublish"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

func TestMemoryBackendConformance(t *testing.T) {
	f := backendtest.Features{
		PublishRaw: func(ctx context.Context, b runtime.Backend, queue string, body []byte) error {
			return rawpublish.ToMemory(ctx, b, queue, body)
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
