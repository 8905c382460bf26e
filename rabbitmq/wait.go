package rabbitmq

import (
	"cmp"
	"context"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/sync/singleflight"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// waiter holds jobs for a delay before they reach their queue: retries,
// deferrals and delayed enqueues. Each queue's delay mode has its delayer:
// hold queues (queueDelayer, wait_queue.go), the delayed-message
// plugin's exchange (pluginDelayer, wait_plugin.go) or the delay ladder
// (ladderDelayer, wait_ladder.go).
type waiter struct {
	book        *queueBook
	enc         encoder
	pub         *publisher
	decl        *declarer // hold queue declares, on the publishing connection
	topo        *declarer // delay exchange declares, on the topology connection
	names       topology.Names
	granularity time.Duration
	mode        runtime.DelayMode // Options.Delay: a queue's when it names none; empty for runtime.DefaultDelay
	provisioned bool              // Options.ProvisionedDelayExchange
	version     topology.Version  // the broker's, for the ladder's arguments

	declaring singleflight.Group // hold queue declares in flight, by name
	holdDecl  holdDeclares       // which hold queues need a declare of their own
	delayers  map[runtime.DelayMode]delayer
	ladders   *ladders // delay ladders declared
	// ladderOf is the ladder of each queue type, made once: read, never
	// written, after newWaiter.
	ladderOf map[runtime.QueueType]topology.Ladder
}

func newWaiter(w *waiter) *waiter {
	w.delayers = map[runtime.DelayMode]delayer{
		runtime.DelayQueue:  queueDelayer{w: w},
		runtime.DelayPlugin: pluginDelayer{w: w},
		runtime.DelayLadder: ladderDelayer{w: w},
	}
	w.ladders = newLadders()
	w.ladderOf = map[runtime.QueueType]topology.Ladder{}
	for _, t := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		w.ladderOf[t] = topology.NewLadder(t, w.granularity, w.version)
	}
	return w
}

// delayer holds waits for one delay mode.
type delayer interface {
	// prepare sets up what q's waits need before q is declared, on every
	// Declare of q, so that a failure leaves no queue behind.
	prepare(ctx context.Context, q runtime.QueueConfig) error
	// declare finishes what q's waits need once q is declared.
	declare(ctx context.Context, q runtime.QueueConfig) error
	// target checks what waits onto q, declared elsewhere, need.
	target(ctx context.Context, q runtime.QueueConfig) error
	// wait publishes msg so that it reaches q after delay, which the caller
	// has rounded up to the granularity and checked against
	// runtime.MaxDeferral. msg already carries its wire priority.
	wait(ctx context.Context, q runtime.QueueConfig, kind admin.HoldKind, msg amqp.Publishing, delay time.Duration) error
}

// delayer returns the delayer of q's delay mode.
func (w *waiter) delayer(q runtime.QueueConfig) (delayer, error) {
	mode := cmp.Or(q.Delay, w.mode, runtime.DefaultDelay(q.QueueType))
	d, ok := w.delayers[mode]
	if !ok {
		return nil, fmt.Errorf("%w: queue %q: delay mode %q", runtime.ErrInvalidConfig, q.Name, mode)
	}
	return d, nil
}

// wait publishes env, encoded with o (its wire priority, and what it must
// fit when it is a copy of a job on the broker), to come back to queue
// after delay, at least one granularity (waits.RoundAtLeastOne). A delay that
// is too long or a queue not declared here is refused before anything is
// published.
func (w *waiter) wait(ctx context.Context, queue string, kind admin.HoldKind, env *runtime.Envelope, o codec.Options, delay time.Duration) error {
	rounded, err := waits.RoundAtLeastOne(delay, w.granularity)
	if err != nil {
		return fmt.Errorf("%s wait on queue %q: %w", kind, queue, err)
	}
	q, err := w.book.waitTarget(queue)
	if err != nil {
		return fmt.Errorf("%s wait: %w", kind, err)
	}
	d, err := w.delayer(q)
	if err != nil {
		return err
	}
	msg, err := w.enc.encode(env, o)
	if err != nil {
		return err
	}
	return d.wait(ctx, q, kind, msg, rounded)
}

// waitCopy is wait of env, a copy of a job on the broker (a retry, a
// deferral), at wire priority priority, made to fit what the publishing
// connection takes (encoder.encodeCopy).
func (w *waiter) waitCopy(ctx context.Context, queue string, kind admin.HoldKind, env *runtime.Envelope, priority uint8, delay time.Duration) error {
	return w.wait(ctx, queue, kind, env, codec.Options{Priority: priority, Fit: w.enc.fit()}, delay)
}

// maxPriority is the wire priority a deferred job of q travels at: its
// MaxPriority, or 0 on a queue of runtime.NoPriority.
func maxPriority(q runtime.QueueConfig) uint8 {
	return uint8(min(max(q.MaxPriority, 0), 255))
}
