package rabbitmq

import (
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"
)

// loop matches confirms and returns to the publishes in flight until both
// notification channels are closed, then fails whatever is still pending
// with why the channel ended.
func (pc *pubChannel) loop(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(pc.done)
	cause := errors.New("channel closed")
	for confirms != nil || returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			pc.onReturn(r)
		case c, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			pc.onConfirm(c)
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
	// Both notification channels are closed: no confirm can come any more.
	// The close notification, if any, was sent before they were closed.
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
	for seq, w := range pc.pending {
		w.res <- pc.broken
		pc.forget(seq, w)
	}
	pc.mu.Unlock()
}

func (pc *pubChannel) onConfirm(c amqp.Confirmation) {
	pc.mu.Lock()
	w := pc.pending[c.DeliveryTag]
	if w != nil {
		pc.forget(c.DeliveryTag, w)
	}
	pc.mu.Unlock()
	switch {
	case w == nil:
	case w.ret != nil:
		w.res <- fmt.Errorf("%w: queue %q (exchange %q): %d %s", ErrUnroutable, w.ret.RoutingKey, w.ret.Exchange, w.ret.ReplyCode, w.ret.ReplyText)
	case !c.Ack:
		w.res <- ErrNacked
	default:
		w.res <- nil
	}
}

// forget removes the publish seq, waiting on w, from the books. pc.mu must
// be held.
func (pc *pubChannel) forget(seq uint64, w *waiter) {
	delete(pc.pending, seq)
	if w.id != "" && pc.ids[w.id] == seq {
		delete(pc.ids, w.id)
	}
}
