package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// declares declares the queues a logical queue is made of, as the broker
// at hand takes them: the work queue and its dead-letter queue, checked for
// a delivery limit (decl_limit.go), and kept as they are where they exist
// in another shape, with a warning (decl_work.go). Hold queues are the
// waits' (wait_queue.go).
type declares struct {
	decl    *declarer
	names   topology.Names
	version topology.Version
	noDead  bool // Options.NoDeadLetterQueues
	api     *mgmtAPI
	warn    *warnings
	log     *slog.Logger
	limits  limitPolicies
}

// deadQueue returns the dead-letter queue of q: quorum when q is.
func (t *declares) deadQueue(q runtime.QueueConfig) topology.Queue {
	if q.QueueType == runtime.QueueQuorum {
		return t.names.QuorumDead(q.Name)
	}
	return t.names.Dead(q.Name)
}

// dead declares the dead-letter queue of q. A quorum q whose
// dead-letter queue already exists as a classic queue (declared by another
// program, or by hand) keeps it: dead jobs still land there, unreplicated, and
// a warning, once per queue, says how to migrate. Any other refusal is
// returned as the broker's error.
func (t *declares) dead(ctx context.Context, q runtime.QueueConfig) error {
	dead := t.deadQueue(q)
	err := t.unlimited(ctx, dead)
	if err == nil || q.QueueType != runtime.QueueQuorum || !isCode(err, amqp.PreconditionFailed) {
		return err
	}
	// A declare that matches it again is the test that it is a classic
	// queue.
	if t.decl.declare(ctx, t.names.Dead(q.Name)) != nil {
		return err
	}
	t.warn.once("dead:"+dead.Name, fmt.Sprintf("queuey: the dead-letter queue of quorum queue %q is a classic queue; it is kept, so dead jobs are not replicated. "+
		"To migrate: stop the producers and workers of %q, move the messages of %q elsewhere (a shovel, or read and re-publish them), delete %q, and start them again: the next declare makes it a quorum queue",
		q.Name, q.Name, dead.Name, dead.Name), "queue", q.Name, "dead_letter_queue", dead.Name)
	return nil
}

// queue declares q's work queue and, unless Options.NoDeadLetterQueues,
// its dead-letter queue, and checks the broker's policies for a delivery
// limit on them.
func (t *declares) queue(ctx context.Context, q runtime.QueueConfig) error {
	work, prio := topology.Work(q, t.version)
	warnPriorities(t.log, q, t.version, prio)
	if err := t.work(ctx, work); err != nil {
		return err
	}
	if !t.noDead {
		if err := t.dead(ctx, q); err != nil {
			dead := t.deadQueue(q)
			if isCode(err, amqp.PreconditionFailed) {
				return mismatchError(dead, err, true)
			}
			return brokerError(fmt.Sprintf("declare dead-letter queue %q", dead.Name), err)
		}
	}
	t.checkPolicyLimits(ctx, q)
	return nil
}

// exists checks that the queue called name exists on the broker,
// declaring nothing.
func (t *declares) exists(ctx context.Context, name string) error {
	err := t.decl.do(ctx, fmt.Sprintf("check queue %q", name), func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
		return err
	})
	switch {
	case isNoQueue(err):
		return errs.Unknown(name, "does not exist on the broker: declare it (runtime.NewProducer, or a worker that handles it) before enqueueing onto it")
	case err != nil:
		return brokerError(fmt.Sprintf("check queue %q", name), err)
	}
	return nil
}
