package rabbitmq

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/syncx"
)

// batchWindow is how many publishes of one batch may await their confirms
// at once.
const batchWindow = 1024

// startRun starts the publishes of msgs[i:hi] with the socket corked, so
// that they go out together (see corkConn), into flights and errs. It
// stops early, and returns the index of the first publish not started,
// when the connection is blocked; otherwise it returns hi.
func (pc *pubChannel) startRun(ctx context.Context, msgs []outMsg, flights []inflight, errs []error, i, hi int) int {
	pc.sock.cork()
	defer pc.sock.uncork()
	for ; i < hi; i++ {
		err := pc.startIn(ctx, &flights[i], msgs[i].exchange, msgs[i].key, msgs[i].msg, true, true, nil)
		if errors.Is(err, errBlockedNow) {
			return i
		}
		errs[i] = err
	}
	return hi
}

// corkRun is how many publishes of a batch are written to the socket
// together (see corkConn).
const corkRun = 64

// outMsg is one publish of a batch.
type outMsg struct {
	// exchange is where it goes: empty for the default exchange, which
	// routes by key to the queue of that name.
	exchange string
	key      string
	msg      amqp.Publishing
}

// publishBatch publishes msgs, each to its exchange, mandatory, all on
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
	flights := make([]inflight, len(msgs)) // one allocation for the batch
	var abandoned []*inflight
	defer func() {
		if len(abandoned) > 0 {
			go forgetAll(pc, abandoned)
		}
	}()
	await := func(i int) {
		w := &flights[i]
		switch {
		case w.dc == nil: // not started
		case ctx.Err() != nil && !syncx.Closed(w.dc.Done()):
			// The broker still owes it a confirm: settle would leave a
			// goroutine each behind to wait for it; one waits for all.
			abandoned = append(abandoned, w)
			errs[i] = fmt.Errorf("publish to %q: %w: stopped waiting for the broker's confirm: %w", msgs[i].key, ErrNotConfirmed, ctx.Err())
		default:
			errs[i] = pc.await(ctx, w, msgs[i].key)
		}
	}
	for lo := 0; lo < len(msgs); lo += corkRun {
		hi := min(lo+corkRun, len(msgs))
		for i := max(lo, batchWindow); i < hi; i++ {
			await(i - batchWindow)
		}
		for i := lo; i < hi; {
			if i = pc.startRun(ctx, msgs, flights, errs, i, hi); i == hi {
				break
			}
			// The connection is blocked by a resource alarm: wait it
			// out uncorked, so that its other frames still go.
			if err := pc.conn.awaitUnblocked(ctx); err != nil {
				for ; i < hi; i++ {
					errs[i] = fmt.Errorf("publish to %q: %w", msgs[i].key, err)
				}
			}
		}
	}
	for i := max(0, len(msgs)-batchWindow); i < len(msgs); i++ {
		await(i)
	}
	return errs
}

// forgetAll waits for the confirms of ws, publishes whose caller stopped
// waiting, and takes them off pc's books: a return that comes for one
// before then must not be paired with a later publish.
func forgetAll(pc *pubChannel, ws []*inflight) {
	for _, w := range ws {
		<-w.dc.Done() // amqp091-go settles every one when the channel closes
		pc.mu.Lock()
		pc.forget(w.seq, w)
		pc.mu.Unlock()
	}
}
