package rabbitmq

import (
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
)

// seqHeader carries a publish's sequence number on its channel when its
// message id cannot pair a basic.return with it: when another publish with
// the same id is in flight on the channel. Each header costs the broker time
// on every publish, so the common case goes without.
const seqHeader = "x-queuey-publish-seq"

// seqHeaderRoom is the most that seqHeader adds to a content header: its
// entry, and the table's length when the message had no headers.
var seqHeaderRoom = 4 + codec.EntrySize(seqHeader, int64(0))

// pair hands return r to the publish in flight it belongs to, and reports
// whether there was one.
func (pc *pubChannel) pair(r *amqp.Return) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if seq, ok := r.Headers[seqHeader].(int64); ok {
		if w := pc.pending[uint64(seq)]; w != nil {
			w.ret = r
			return true
		}
	} else if seq, ok := pc.ids[r.MessageId]; ok && r.MessageId != "" {
		pc.pending[seq].ret = r
		return true
	} else if pc.solo && len(pc.pending) == 1 {
		for _, w := range pc.pending {
			w.ret = r
		}
		return true
	}
	return false
}

// loop pairs returns with the publishes in flight until the channel's
// notification channels are closed, and records why the channel ended.
// Confirms do not pass through it: each publish waits for its own (see
// pubChannel.settle).
func (pc *pubChannel) loop(returns, paired <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(pc.done)
	cause := errors.New("channel closed")
	for returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			matched := pc.pair(&r)
			// The reader now hands r over again, and reads on only once
			// it is taken; it never closes paired before returns. (Were
			// pairing r to take more than amqp091-go's five seconds, the
			// reader would give this hand-over up, and the next return
			// would be lost: pairing takes pc.mu, which nothing holds for
			// long, and anything slower, such as logging, waits until
			// after.)
			<-paired
			if !matched {
				pc.log.Error("queuey: basic.return matches no publish in flight", "queue", r.RoutingKey, "reply", r.ReplyText)
			}
		case e, ok := <-closes:
			closes = nil
			generic := true
			if ok && e != nil {
				cause, generic = brokerError("channel closed", e), false
			}
			pc.mu.Lock()
			pc.breakWith(fmt.Errorf("%w: %w", ErrNotConfirmed, cause), generic)
			pc.mu.Unlock()
		}
	}
	// The notification channels are closed: the close notification, if
	// any, was sent before.
	generic := true
	if closes != nil {
		select {
		case e, ok := <-closes:
			if ok && e != nil {
				cause, generic = brokerError("channel closed", e), false
			}
		default:
		}
	}
	pc.mu.Lock()
	pc.breakWith(fmt.Errorf("%w: %w", ErrNotConfirmed, cause), generic)
	pc.mu.Unlock()
}

// forget removes the publish seq, waiting on w, from the books. pc.mu must
// be held.
func (pc *pubChannel) forget(seq uint64, w *inflight) {
	delete(pc.pending, seq)
	if w.id != "" && pc.ids[w.id] == seq {
		delete(pc.ids, w.id)
	}
}
