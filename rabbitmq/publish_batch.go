package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"
)

// batchWindow is how many publishes of one batch may await their confirms
// at once.
const batchWindow = 1024

// corkRun is how many publishes of a batch are written to the socket
// together (see corkConn).
const corkRun = 64

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
	for lo := 0; lo < len(msgs); lo += corkRun {
		hi := min(lo+corkRun, len(msgs))
		for i := max(lo, batchWindow); i < hi; i++ {
			await(i - batchWindow)
		}
		// Nothing below waits on the broker: the run's publishes go out
		// together when the cork comes out.
		pc.sock.cork()
		for i := lo; i < hi; i++ {
			waiters[i], errs[i] = pc.start(ctx, "", msgs[i].key, msgs[i].msg, true)
		}
		pc.sock.uncork()
	}
	for i := max(0, len(msgs)-batchWindow); i < len(msgs); i++ {
		await(i)
	}
	return errs
}
