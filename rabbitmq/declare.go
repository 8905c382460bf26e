package rabbitmq

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// declarer declares topology on a channel of its own, since a refused
// declare closes the channel it was made on: publishes in flight elsewhere
// are not hit, and the next declare opens a fresh channel.
type declarer struct {
	conn *connection
	mu   sync.Mutex
	ch   *amqp.Channel
}

// declare declares queue q, durable.
func (d *declarer) declare(ctx context.Context, q topology.Queue) error {
	return d.do(ctx, fmt.Sprintf("declare queue %q", q.Name), func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(q.Name, true, false, false, false, q.Args)
		return err
	})
}

// do runs fn on the declaring channel, opening one first when there is
// none, and drops the channel when fn fails: the broker closes a channel
// on a refused declare. fn's error is returned as it is; what names the
// operation in errors before it.
func (d *declarer) do(ctx context.Context, what string, fn func(ch *amqp.Channel) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if d.ch == nil || d.ch.IsClosed() {
		ch, err := d.conn.channel(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		d.ch = ch
	}
	if err := fn(d.ch); err != nil {
		_ = d.ch.Close()
		d.ch = nil
		return err
	}
	return nil
}

func (d *declarer) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ch != nil {
		_ = d.ch.Close()
		d.ch = nil
	}
}

// mismatchError explains a work queue that exists with other arguments.
func mismatchError(q topology.Queue, err error) error {
	return fmt.Errorf("%w: queue %q already exists with arguments other than %s (broker: %v). "+
		"Either drain and delete the queue so that it is declared again with these arguments, "+
		"or declare it as it was (for a queue without x-max-priority: max_priority=0; "+
		"deferral still works then, but deferred jobs return in FIFO order, behind the backlog)",
		ErrQueueMismatch, q.Name, describeArgs(q.Args), err)
}

func describeArgs(args amqp.Table) string {
	if len(args) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(args))
	for k, v := range args {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
