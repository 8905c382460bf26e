package rabbitmq

import (
	"context"
	"fmt"
	"regexp"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// work declares work queue q. With dead-letter queues on, q
// dead-letters into q.dead through the default exchange, so that the
// broker's own dead-lettering (a quorum queue's delivery limit) never
// drops a job. A q that exists without these arguments (declared by
// another program, or by hand), cannot change them: the broker refuses the declare
// (406, which closes only the declaring channel). Then q is declared as it
// is, and a warning says once how to migrate.
func (t *declares) work(ctx context.Context, work topology.Queue) error {
	if !t.noDead {
		work = topology.DeadLettered(work, t.names.Dead(work.Name).Name)
	}
	err := t.unlimited(ctx, work)
	if isCode(err, amqp.PreconditionFailed) && !t.noDead && lacksDeadLettering(err) {
		old := topology.WithoutDeadLettering(work)
		if err = t.unlimited(ctx, old); err == nil {
			t.warnOldShape(work)
			return nil
		}
		work = old
	}
	switch {
	case err == nil:
		return nil
	case isCode(err, amqp.PreconditionFailed):
		return mismatchError(work, err, false)
	default:
		// Declare's caller names the queue (NewProducer and Worker.Run:
		// "declare queue q").
		return brokerReply(err)
	}
}

// lacksDeadLettering reports whether the broker refused a declare because
// the existing queue has no dead-letter exchange or routing key.
func lacksDeadLettering(err error) bool {
	arg, _, present, ok := inequivalent(err)
	return ok && !present && (arg == topology.ArgDeadLetterExchange || arg == topology.ArgDeadLetterRoutingKey)
}

// warnOldShape logs, once per queue, that work exists without
// dead-lettering into its dead-letter queue, and how to migrate.
func (t *declares) warnOldShape(work topology.Queue) {
	dead := t.names.Dead(work.Name).Name
	t.warn.once("work:"+work.Name, fmt.Sprintf("queuey: queue %q exists without a dead-letter exchange (declared without queuey's arguments); kept as it is. "+
		"Jobs are still dead-lettered by the worker, but what the broker dead-letters on its own (a quorum queue's delivery limit) is dropped. "+
		"To migrate, either add a policy: rabbitmqctl set_policy %s-dlx '^%s$' '{\"dead-letter-exchange\":\"\",\"dead-letter-routing-key\":\"%s\"}' --apply-to queues; "+
		"or stop producers and workers, drain and delete the queue, and let it be declared again", work.Name, work.Name, regexp.QuoteMeta(work.Name), dead),
		"queue", work.Name, "dead_letter_queue", dead)
}
