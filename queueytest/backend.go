package queueytest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/clock"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// Backend is a runtime.MemoryBackend that records every job enqueued
// through it (Publish), for the Require functions, and follows the
// deliveries of its subscriptions, for RunReady and Drain. Retries and
// deferrals are not enqueues and are not recorded. Its waits follow its
// Clock. It is safe for concurrent use.
type Backend struct {
	*runtime.MemoryBackend

	mu       sync.Mutex
	enqueued []record
	outcomes []Outcome
	returned int            // outcomes returned by RunReady and Drain
	settling int            // settles begun and not yet recorded
	consumed map[string]int // subscriptions opened, by queue
	changed  chan struct{}  // a token after each publish, settle or subscription
	workers  map[*runtime.Worker]*running

	clock   *Clock
	t       testing.TB // the test that made the backend
	cleanup func(func())
}

var _ runtime.Backend = (*Backend)(nil)

// record is one job enqueued through a Backend.
type record struct {
	env   *runtime.Envelope
	delay time.Duration
}

// New returns an empty Backend with queues declared on it, closed when t
// ends. It logs, and so do the workers over it, to t's output as t.Log
// does: shown when the test fails, or with go test -v.
//
// Its waits (retries, deferrals, delayed enqueues) and the schedules of
// the workers over it follow its Clock, which stands still unless the
// test moves it (Clock.Advance) or Drain does.
func New(t testing.TB, queues ...runtime.QueueConfig) *Backend {
	t.Helper()
	b := &Backend{
		MemoryBackend: runtime.NewMemoryBackend(runtime.MemoryLogger(testLogger(t))),
		consumed:      map[string]int{},
		changed:       make(chan struct{}, 1),
		workers:       map[*runtime.Worker]*running{},
		clock:         &Clock{fake: clock.NewFake(time.Now().UTC().Truncate(time.Second))},
		t:             t,
		cleanup:       t.Cleanup,
	}
	if err := runtime.Hooks(hooks.K).SetClock(b.MemoryBackend, b.clock.fake); err != nil {
		t.Fatalf("queueytest: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, q := range queues {
		if err := b.Declare(context.Background(), q); err != nil {
			t.Fatalf("queueytest: declare queue %q: %v", q.Name, err)
		}
	}
	return b
}

// Publish stores env as the memory backend does and, once it is stored,
// records it with the delay it was enqueued with.
func (b *Backend) Publish(ctx context.Context, env *runtime.Envelope, delay time.Duration) error {
	if err := b.MemoryBackend.Publish(ctx, env, delay); err != nil {
		return err
	}
	b.mu.Lock()
	b.enqueued = append(b.enqueued, record{env: env.Clone(), delay: delay})
	b.mu.Unlock()
	b.notify()
	return nil
}

// Consume subscribes to q as the memory backend does, following each
// delivery to its outcome.
func (b *Backend) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	inner, err := b.MemoryBackend.Consume(ctx, q)
	if err != nil {
		return nil, err
	}
	s := &subscription{Subscription: inner, b: b, out: make(chan runtime.Delivery), done: make(chan struct{})}
	go s.forward()
	b.mu.Lock()
	b.consumed[q.Name]++
	b.mu.Unlock()
	b.notify()
	return s, nil
}

// Clock returns b's clock.
func (b *Backend) Clock() *Clock { return b.clock }

// records returns the jobs enqueued onto queue so far, in order.
func (b *Backend) records(queue string) []record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(b.enqueued), func(r record) bool { return r.env.Queue != queue })
}

func (b *Backend) notify() {
	select {
	case b.changed <- struct{}{}:
	default:
	}
}
