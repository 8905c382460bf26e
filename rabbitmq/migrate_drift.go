package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var (
	_ admin.DriftReader = (*Backend)(nil)
	_ admin.Migrator    = (*Backend)(nil)
)

// wanted returns q's work queue and dead-letter queue as this backend
// declares them ("" dead name with Options.NoDeadLetterQueues).
func (b *Backend) wanted(q runtime.QueueConfig) (work, dead topology.Queue) {
	v := b.declares.version
	if !b.opts.NoDeadLetterQueues {
		dead = v.Unlimited(b.declares.deadQueue(q))
	}
	return topology.Want(q, v, dead.Name), dead
}

// QueueDrift compares q, as this backend would declare it, with the queue
// on the broker, argument by argument, and its dead-letter queue too. It
// reads the arguments through the management API; without it the error
// wraps admin.ErrCannotList.
func (b *Backend) QueueDrift(ctx context.Context, q runtime.QueueConfig) (admin.QueueDrift, error) {
	q, _, err := b.resolve(q)
	if err != nil {
		return admin.QueueDrift{}, err
	}
	c, err := b.ops.api.client(ctx)
	if err != nil {
		return admin.QueueDrift{Queue: q.Name}, err
	}
	return b.drift(ctx, c, q)
}

func (b *Backend) drift(ctx context.Context, c *mgmt.Client, q runtime.QueueConfig) (admin.QueueDrift, error) {
	d := admin.QueueDrift{Queue: q.Name}
	work, dead := b.wanted(q)
	got, found, err := apiQueue(ctx, c, work.Name)
	if err != nil {
		return d, err
	}
	if _, tfound, err := apiQueue(ctx, c, topology.Migrating(q.Name)); err != nil {
		return d, err
	} else {
		d.Migrating = tfound
	}
	if !found {
		return d, nil
	}
	d.Exists = true
	d.Diffs = argDiffs(work.Name, got, work.Args)
	if dead.Name != "" {
		got, found, err := apiQueue(ctx, c, dead.Name)
		if err != nil {
			return d, err
		}
		if found {
			d.Diffs = append(d.Diffs, argDiffs(dead.Name, got, dead.Args)...)
		}
	}
	return d, nil
}

// apiQueue reads queue name through the management API.
func apiQueue(ctx context.Context, c *mgmt.Client, name string) (mgmt.Queue, bool, error) {
	q, err := c.Queue(ctx, name)
	switch {
	case errors.Is(err, mgmt.ErrNotFound):
		return q, false, nil
	case err != nil:
		return q, false, fmt.Errorf("%w: %v", admin.ErrCannotList, err)
	}
	return q, true, nil
}

// argDiffs compares the arguments of queue got, as the management API
// lists them, with want, those it is declared with. A queue declared
// without x-queue-type has the type the API names.
func argDiffs(name string, got mgmt.Queue, want amqp.Table) []admin.ArgDiff {
	have := map[string]string{}
	for k, v := range got.Arguments {
		have[k] = argString(v)
	}
	if _, ok := have[topology.ArgQueueType]; !ok && got.Type != "" {
		have[topology.ArgQueueType] = got.Type
	}
	if _, ok := want[topology.ArgQueueType]; !ok {
		// Declared without one: the broker's default.
		w := amqp.Table{topology.ArgQueueType: string(runtime.QueueClassic)}
		for k, v := range want {
			w[k] = v
		}
		want = w
	}
	keys := map[string]bool{}
	for k := range have {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var diffs []admin.ArgDiff
	for _, k := range sorted {
		w := ""
		if v, ok := want[k]; ok {
			w = argString(v)
		}
		if have[k] != w {
			diffs = append(diffs, admin.ArgDiff{Queue: name, Arg: k, Broker: have[k], Config: w})
		}
	}
	return diffs
}

// argString is an argument's value as the broker quotes it: numbers
// without a fraction as integers, whatever type carried them.
func argString(v any) string {
	switch n := v.(type) {
	case float64:
		if n == math.Trunc(n) {
			return fmt.Sprintf("%d", int64(n))
		}
	case string:
		if n == "" {
			return `""`
		}
		return n
	}
	return fmt.Sprintf("%v", v)
}
