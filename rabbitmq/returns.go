package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"
)

// seqHeader carries a publish's sequence number on its channel when its
// message id cannot pair a basic.return with it: when another publish with
// the same id is in flight on the channel. Each header costs the broker time
// on every publish, so the common case goes without.
const seqHeader = "x-queuey-publish-seq"

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
