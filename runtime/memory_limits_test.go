package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

type blob struct{ B []byte }

// TestMemoryRefusesWhatTheBrokerRefuses: the memory backend refuses a job
// over its max message size (16 MiB by default, RabbitMQ 4.x's default
// max_message_size; MemoryMaxMessageSize sets another) with ErrTooLarge,
// and a queue name the broker refuses (longer than AMQP allows for it and
// its derived names, or in the broker's reserved amq. prefix) with
// ErrInvalidConfig.
func TestMemoryRefusesWhatTheBrokerRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q := runtime.QueueConfig{Name: "limits", Kind: runtime.KindOf[blob]()}
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() })
	p := producerOf(t, b, q)
	big := blob{B: make([]byte, runtime.DefaultMemoryMaxMessageSize)}
	if _, err := runtime.Enqueue(ctx, p, q, big); !errors.Is(err, runtime.ErrTooLarge) || !strings.Contains(err.Error(), "MemoryMaxMessageSize") {
		t.Errorf("enqueue of a %d-byte payload: %v, want ErrTooLarge naming MemoryMaxMessageSize", len(big.B), err)
	}
	if _, err := runtime.Enqueue(ctx, p, q, blob{B: make([]byte, 1<<20)}); err != nil {
		t.Errorf("enqueue of 1 MiB: %v", err)
	}
	if n, err := b.Ready(ctx, q.Name); err != nil || n != 1 {
		t.Errorf("%d jobs ready (%v), want the 1 MiB one alone", n, err)
	}

	roomy := runtime.NewMemoryBackend(runtime.MemoryMaxMessageSize(32 << 20))
	t.Cleanup(func() { _ = roomy.Close() })
	if _, err := runtime.Enqueue(ctx, producerOf(t, roomy, q), q, big); err != nil {
		t.Errorf("enqueue of %d bytes with MemoryMaxMessageSize(32 MiB): %v", len(big.B), err)
	}

	for _, name := range []string{"amq.jobs", strings.Repeat("q", 236), strings.Repeat("q", 256)} {
		err := b.Declare(ctx, runtime.QueueConfig{Name: name})
		if !errors.Is(err, runtime.ErrInvalidConfig) {
			t.Errorf("declare %.20q (%d bytes): %v, want ErrInvalidConfig", name, len(name), err)
		}
		if strings.HasPrefix(name, "amq.") && !strings.Contains(err.Error(), "amq.") {
			t.Errorf("declare %q: %v, want a reason that names the reserved prefix", name, err)
		}
	}
}
