package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// silentBackend is a memory backend whose subscriptions stop and close
// as one over a broker that never answers: StopContext and CloseContext
// return only when their context ends.
type silentBackend struct {
	*runtime.MemoryBackend
	subscribed chan struct{}
}

func (b *silentBackend) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	sub, err := b.MemoryBackend.Consume(ctx, q)
	if err != nil {
		return nil, err
	}
	select {
	case b.subscribed <- struct{}{}:
	default:
	}
	return silentSub{sub}, nil
}

type silentSub struct{ runtime.Subscription }

func (s silentSub) StopContext(ctx context.Context) error {
	<-ctx.Done()
	return s.Stop()
}

func (s silentSub) CloseContext(ctx context.Context) error {
	<-ctx.Done()
	return s.Close()
}

// TestSilentStopLeavesNothing: a worker with no job running whose
// subscription's stop waits out the whole shutdown timeout returns nil,
// not ErrShutdownTimeout: no job was left, though the stop ended as the
// timeout did.
func TestSilentStopLeavesNothing(t *testing.T) {
	t.Parallel()
	for i := range 20 {
		b := &silentBackend{MemoryBackend: quietMemory(), subscribed: make(chan struct{}, 1)}
		q := runtime.DefaultQueueConfig("silent-stop")
		w := runtime.NewWorker(b, runtime.WithShutdownTimeout(20*time.Millisecond))
		runtime.Handle(w, q, func(context.Context, ping) error { return nil })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		recvT(t, b.subscribed)
		cancel()
		if err := recvT(t, done); err != nil {
			t.Fatalf("run %d: Run = %v, want nil: no job was running", i, err)
		}
		_ = b.Close()
	}
}
