package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// seqHeader carries a publish's sequence number on its channel when its
// message id cannot pair a basic.return with it: when another publish with
// the same id is in flight on the channel. Each header costs the broker time
// on every publish, so the common case goes without.
const seqHeader = "x-queuey-publish-seq"

func (pc *pubChannel) onReturn(r amqp.Return) {
	if pc.pair(&r) {
		return
	}
	pc.log.Error("queuey: basic.return matches no publish in flight", "queue", r.RoutingKey, "reply", r.ReplyText)
}

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
	} else if len(pc.pending) == 1 {
		for _, w := range pc.pending {
			w.ret = r
		}
		return true
	}
	return false
}
