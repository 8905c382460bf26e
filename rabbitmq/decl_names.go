package rabbitmq

import (
	"fmt"

	"github.com/queuey/queuey/internal/rules/errs"
	rules "github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/runtime"
)

// checkNames refuses q, before anything is declared, when a broker name it
// would need is longer than an AMQP short string: q itself, its dead-letter
// queue, its longest hold queue name, or its delay exchange; or when its
// delay exchange would be the pause notices' exchange; or when q's name is
// one a hold queue of another queue is given ("orders.retry.1000"), which
// would collide with it once that queue waits so long.
func (t *declares) checkNames(q runtime.QueueConfig, d delayer) error {
	if h, ok := t.names.NamedLikeHold(q.Name); ok {
		// Named by the rule hold queues are named by: queue h.Queue's
		// waits of h.Delay would be published into it (or be refused by
		// it, declared otherwise), whenever h.Queue exists.
		return fmt.Errorf("%w: queue %q: that is the name of the hold queue of queue %q for its %s waits of %v; name the queue otherwise",
			runtime.ErrInvalidConfig, errs.Clip(q.Name), errs.Clip(h.Queue), h.Kind, h.Delay)
	}
	names := []struct{ what, name string }{{"queue name", q.Name}}
	if !t.noDead {
		names = append(names, struct{ what, name string }{"dead-letter queue name", t.names.Dead(q.Name).Name})
	}
	switch d := d.(type) {
	case queueDelayer:
		names = append(names, struct{ what, name string }{"longest hold queue name", t.names.LongestHoldName(q.Name)})
	case pluginDelayer:
		ex := plugin.ExchangeName(q)
		if ex == controlExchange {
			return fmt.Errorf("%w: queue %q: delay exchange %q is the exchange that carries pause and resume notices; name the delay exchange otherwise",
				runtime.ErrInvalidConfig, errs.Clip(q.Name), ex)
		}
		names = append(names, struct{ what, name string }{"delay exchange name", ex})
	case ladderDelayer:
		l := d.ladder(q)
		if n := l.KeyLen(q.Name); n > codec.MaxShortString {
			return fmt.Errorf("%w: queue %q: with delay=ladder its name is at most %d bytes, and it is %d: a ladder wait's routing key is %d words of one bit (%d bytes at granularity %v) followed by the queue name, at most %d bytes (an AMQP short string); shorten the queue name or use delay=queue",
				runtime.ErrInvalidConfig, errs.Clip(q.Name), rules.MaxLadderQueue(l.Levels), len(q.Name), l.Levels, 2*l.Levels, l.Granularity, codec.MaxShortString)
		}
	}
	for _, n := range names {
		if len(n.name) > codec.MaxShortString {
			return fmt.Errorf("%w: queue %q: its %s %q is %d bytes, want at most %d (an AMQP short string): shorten the queue name",
				runtime.ErrInvalidConfig, errs.Clip(q.Name), n.what, errs.Clip(n.name), len(n.name), codec.MaxShortString)
		}
	}
	return nil
}
