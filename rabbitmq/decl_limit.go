package rabbitmq

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// Quorum queues and the broker's delivery limit.
//
// A quorum queue counts every return of a message (a nack or reject with
// requeue, a consumer's channel or connection closing with it unacked) and
// dead-letters the message past its delivery limit, or drops it where the
// queue has no dead-letter target. RabbitMQ 3.x quorum queues have no limit
// unless one is set; RabbitMQ 4.x ones have a default of 20. queuey counts
// a job's attempts itself (max_attempts, up to 1000) and keeps its dead
// letters, so on 4.x it declares the quorum queues that consumers read
// (the work queue and its dead-letter queue) with x-delivery-limit -1,
// which turns the limit off there (on 3.x the same value dead-letters on
// the first return, so it is never sent to 3.x). Hold queues are declared
// without it: nothing consumes them, so no delivery is ever counted there,
// and they stay declared alike by every producer (the Python and Node
// clients too) and on every version. A queue that exists with another
// limit, or none (the default of 20), keeps it, and so does a queue under a
// policy that sets one: a warning names the queue, the limit and the fix.

// unlimited declares q as the broker's version has it
// (topology.Version.Unlimited). When q exists with an x-delivery-limit of
// its own, or without one where q asks for -1 (the broker refuses the
// declare), it is declared as it is, and a warning says once what limit is
// in force and how to lift it. Any other refusal is returned as it came.
func (t *declares) unlimited(ctx context.Context, q topology.Queue) error {
	want := t.version.Unlimited(q)
	err := t.decl.declare(ctx, want)
	if err == nil || !isCode(err, amqp.PreconditionFailed) {
		return err
	}
	arg, current, present, ok := inequivalent(err)
	if !ok || arg != topology.ArgDeliveryLimit || (!present && len(want.Args) == len(q.Args)) {
		return err
	}
	asIs := q
	limit := topology.DefaultDeliveryLimit4
	if present {
		n, perr := strconv.Atoi(current)
		if perr != nil {
			return err
		}
		asIs = topology.Queue{Name: q.Name, Args: amqp.Table{topology.ArgDeliveryLimit: int32(n)}}
		for k, v := range q.Args {
			asIs.Args[k] = v
		}
		limit = n
	}
	if err := t.decl.declare(ctx, asIs); err != nil {
		return err
	}
	if limit >= 0 {
		t.warnLimit(q.Name, limit, present, "")
	}
	return nil
}

// warnLimit warns, once per queue, that quorum queue name has a delivery
// limit of limit: by its x-delivery-limit argument (arg), by the broker's
// default for a queue without one, or by the policy named policy.
func (t *declares) warnLimit(name string, limit int, arg bool, policy string) {
	what := "it was declared without x-delivery-limit, so RabbitMQ 4's default applies"
	fix := fmt.Sprintf("set delivery-limit -1 by policy, e.g. rabbitmqctl set_policy %s-no-delivery-limit '^%s$' '{\"delivery-limit\":-1}' --apply-to quorum_queues "+
		"(a queue takes one policy: where another applies, add the key to it), or drain and delete the queue so that it is declared again with x-delivery-limit -1",
		name, regexp.QuoteMeta(name))
	switch {
	case policy != "":
		what = fmt.Sprintf("policy %q sets delivery-limit %d", policy, limit)
		fix = fmt.Sprintf("remove delivery-limit from policy %q", policy)
		if t.version.DefaultDeliveryLimit() {
			fix += " or set it to -1 (a queue argument cannot lift a policy's limit)"
		}
	case arg:
		what = fmt.Sprintf("its x-delivery-limit argument is %d", limit)
		fix = "drain and delete the queue so that it is declared again without a limit (x-delivery-limit -1); neither a redeclare nor a policy can lift an argument's limit"
	}
	t.warn.once("limit:"+name, fmt.Sprintf("queuey: quorum queue %q has a delivery limit of %d (%s): the broker dead-letters a message that went back to the queue unsettled more than %d times "+
		"(worker crashes, connection drops, shutdowns), whatever the job's max_attempts, and drops it where the queue has no dead-letter target (a dead-letter queue has none). To lift it: %s",
		name, limit, what, limit, fix), "queue", name, "delivery_limit", limit)
}

// limitPolicies is what the management API said of the virtual host's
// policies, read once per backend: the first quorum queue declared reads
// them, the others use what it read.
type limitPolicies struct {
	once               sync.Once
	policies, operator []mgmt.Policy
	err                error
}

// checkPolicyLimits warns, once per queue, when a policy or an operator
// policy sets a delivery limit on quorum queue q or its dead-letter queue:
// one that a queue argument cannot lift, and that drops dead letters. It
// reads the policies through the management API; when that cannot be read
// (turned off, not answering, no right to read operator policies), it says
// so once, at info level, and checks nothing more.
func (t *declares) checkPolicyLimits(ctx context.Context, q runtime.QueueConfig) {
	if q.QueueType != runtime.QueueQuorum {
		return
	}
	lp := &t.limits
	lp.once.Do(func() {
		c, err := t.api.client(ctx)
		if err == nil {
			lp.policies, err = c.Policies(ctx)
		}
		if err == nil {
			// Only administrators may read operator policies: without
			// them, the policies are still checked.
			lp.operator, _ = c.OperatorPolicies(ctx)
		}
		lp.err = err
	})
	if lp.err != nil {
		if t.warn.first("limit-policies") {
			t.log.Info("queuey: could not read the broker's policies through the management API, so quorum queues were not checked for a delivery limit set by policy", "error", lp.err)
		}
		return
	}
	names := []string{q.Name}
	if !t.noDead {
		names = append(names, t.deadQueue(q).Name)
	}
	for _, name := range names {
		if limit, from, ok := mgmt.DeliveryLimit(lp.policies, lp.operator, name, string(runtime.QueueQuorum)); ok {
			t.warnLimit(name, limit, false, from)
		}
	}
}
