package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// batchWindow is how many publishes of one batch may await their confirms
// at once.
const batchWindow = 1024

// outMsg is one publish of a batch.
type outMsg struct {
	key string
	msg amqp.Publishing
}

// publishBatch publishes msgs to the default exchange, mandatory, all on
// one channel without waiting in between, then waits for every confirm. It
// returns one error per message.
func (p *publisher) publishBatch(ctx context.Context, msgs []outMsg) []error {
	errs := make([]error, len(msgs))
	s := p.slots[int(p.next.Add(1))%len(p.slots)]
	pc, err := s.get(ctx, p)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	waiters := make([]*waiter, len(msgs))
	await := func(i int) {
		if waiters[i] != nil {
			errs[i] = pc.await(ctx, waiters[i], msgs[i].key)
		}
	}
	for i, m := range msgs {
		if i >= batchWindow {
			await(i - batchWindow)
		}
		waiters[i], errs[i] = pc.start(ctx, "", m.key, m.msg, true)
	}
	for i := max(0, len(msgs)-batchWindow); i < len(msgs); i++ {
		await(i)
	}
	return errs
}
