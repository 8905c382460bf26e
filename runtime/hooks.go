package runtime

import (
	"context"
	"fmt"

	"github.com/queuey/queuey/internal/clock"
	"github.com/queuey/queuey/internal/hooks"
)

// testHooks are the hooks of this package.
type testHooks = hooks.Runtime[*Worker, *Envelope, *MemoryBackend, *Producer, QueueConfig, EnqueueOption]

// Hooks lends this module's test kit (package queueytest) and its tests
// what applications are not given: running one job through a worker with
// no backend, a worker's schedules, a memory backend's clock, raw messages
// on a memory backend's queues, and payloads enqueued as they are. It
// takes only the key internal/hooks holds, which nothing outside this
// module can reach; it panics given any other.
func Hooks(k hooks.Key) hooks.Runtime[*Worker, *Envelope, *MemoryBackend, *Producer, QueueConfig, EnqueueOption] {
	if !k.Valid() {
		panic("runtime.Hooks: the hooks are lent to this module's test kit only")
	}
	return testHooks{
		Run: func(ctx context.Context, w *Worker, queue string, env *Envelope) (hooks.Settled, error) {
			return w.runOne(ctx, queue, env)
		},
		Schedules: (*Worker).schedules,
		EnqueuePayload: func(ctx context.Context, p *Producer, q QueueConfig, payload []byte, opts ...EnqueueOption) (string, error) {
			return p.enqueuePayload(ctx, q, payload, opts...)
		},
		EnqueuePayloads: func(ctx context.Context, p *Producer, q QueueConfig, payloads [][]byte, opts ...EnqueueOption) ([]string, error) {
			return p.enqueuePayloads(ctx, q, payloads, opts...)
		},
		SetClock: (*MemoryBackend).setClock,
		PublishRaw: func(ctx context.Context, b *MemoryBackend, queue string, body []byte) error {
			return b.publishRaw(ctx, queue, body)
		},
	}
}

// schedules returns how many of w's schedules wait for their next tick,
// and how many it has.
func (w *Worker) schedules() (waiting, total int) {
	w.mu.Lock()
	total = len(w.periodics)
	w.mu.Unlock()
	return int(w.idleSchedules.Load()), total
}

// setClock makes c the clock of b, which holds no wait yet, and of the
// schedules of every worker over it.
func (b *MemoryBackend) setClock(c clock.Clock) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.timers) > 0 {
		return fmt.Errorf("the backend already holds %d waits on its clock", len(b.timers))
	}
	b.clk = c
	return nil
}
