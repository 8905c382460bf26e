// Package hooks is the one seam between package runtime and this module's
// test kit (package queueytest) and tests: what they reach in a worker and
// a memory backend that applications are not given. Package runtime lends
// it through runtime.Hooks, which takes only K, a Key only this module can
// reach. Its types are parameterised by the runtime's own, which this
// package cannot import, so every hook is typed.
package hooks

import (
	"context"
	"time"

	"github.com/queuey/queuey/internal/clock"
)

// Key is the argument of runtime.Hooks. K is the only one it takes: a
// Key made any other way (its zero value, which code outside this module
// can reach through type inference or reflection) makes runtime.Hooks
// panic, and K cannot be reached from outside this module.
type Key struct{ p *byte }

var token byte

// K is the Key that runtime.Hooks takes.
var K = Key{p: &token}

// Valid reports whether k is K.
func (k Key) Valid() bool { return k.p == &token }

// Runtime is what package runtime lends, typed by its worker (W), its
// envelope (E), its memory backend (M), its producer (P), its queue config
// (Q) and its enqueue option (O): runtime.Hooks returns a
// Runtime[*runtime.Worker, *runtime.Envelope, *runtime.MemoryBackend,
// *runtime.Producer, runtime.QueueConfig, runtime.EnqueueOption].
type Runtime[W, E, M, P, Q, O any] struct {
	// Run runs env through the handler that w has registered for queue,
	// as the worker would run it on a delivery (the kind check, its
	// middleware and observers, the queue's timeout, the outcome the
	// worker makes of the handler's result), with no backend, and returns
	// how the run was settled. It fails when w has no handler for queue,
	// or a registration of w was refused. It neither starts w nor keeps
	// it from starting.
	Run func(ctx context.Context, w W, queue string, env E) (Settled, error)
	// Schedules returns how many of w's schedules wait for their next
	// tick, and how many it has: a schedule that waits holds its lease
	// and has its timer set.
	Schedules func(w W) (waiting, total int)
	// SetClock makes c the clock of m, a memory backend with no wait held
	// yet, and of the schedules of every worker over it.
	SetClock func(m M, c clock.Clock) error
	// PublishRaw puts body on queue of m as a message of its own, as a
	// foreign producer might. A body that is not a msgpack envelope of
	// the queue is poison: it is moved to the dead letters when it
	// reaches a consumer.
	PublishRaw func(ctx context.Context, m M, queue string, body []byte) error
	// EnqueuePayload enqueues payload, already encoded (or not msgpack
	// at all), onto q through p, as runtime.Enqueue enqueues a job's, and
	// returns the job's ID. The payload stays the caller's.
	EnqueuePayload func(ctx context.Context, p P, q Q, payload []byte, opts ...O) (string, error)
	// EnqueuePayloads is EnqueuePayload of many payloads, as
	// runtime.EnqueueMany enqueues many jobs'.
	EnqueuePayloads func(ctx context.Context, p P, q Q, payloads [][]byte, opts ...O) ([]string, error)
}

// How a run of Runtime.Run was settled.
const (
	Acked        = "acked"
	Requeued     = "requeued"
	Retried      = "retried"
	Deferred     = "deferred"
	DeadLettered = "dead-lettered"
)

// Settled is how a run of Runtime.Run was settled.
type Settled struct {
	// Outcome is Acked, Requeued, Retried, Deferred or DeadLettered, or
	// "" when the run was not settled (its context ended).
	Outcome string
	// Delay is the wait of a retry or a deferral, rounded up to the
	// backend granularity as the backends round it.
	Delay time.Duration
	// Reason is the error a retried job carries, or the dead letter's
	// reason; "" otherwise.
	Reason string
}
