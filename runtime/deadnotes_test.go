package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// TestWorkerTellsSubscriptionWhetherItListens: a worker with observers
// listens for the messages its subscription dead-letters itself; one
// without tells it, with a nil listener, that none will come, so that the
// subscription keeps none of them for its life.
func TestWorkerTellsSubscriptionWhetherItListens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []runtime.WorkerOption
		want []string
	}{
		{"no observers", nil, []string{"nil"}},
		{"an observer", []runtime.WorkerOption{runtime.WithObserver(&blockingStart{outs: make(chan runtime.Outcome, 1)})}, []string{"fn"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &endingBackend{MemoryBackend: quietMemory(), subs: make(chan *endingSub, 10)}
			defer b.Close()
			q := runtime.QueueConfig{Name: "listens", Kind: runtime.KindOf[ping]()}
			w := runtime.NewWorker(b, tc.opts...)
			runtime.Handle(w, q, func(context.Context, ping) error { return nil })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- w.Run(ctx) }()
			sub := recvT(t, b.subs)
			// Run returns once its runners ended, so after the subscribe
			// that made sub has told it.
			cancel()
			if err := recvT(t, errc); err != nil {
				t.Fatalf("Run: %v", err)
			}
			sub.mu.Lock()
			got := slices.Clone(sub.listens)
			sub.mu.Unlock()
			if !slices.Equal(got, tc.want) {
				t.Errorf("NotifyDeadLettered calls %v, want %v", got, tc.want)
			}
		})
	}
}
