package rabbitmq

import (
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// headerDeliveryCount is the quorum queue's count of earlier deliveries of
// a message that went back to the queue unsettled.
const headerDeliveryCount = "x-delivery-count"

// headerRedelivered marks the copy of a redelivered job that a classic
// queue publishes again with its attempt raised, so that the delivery of
// that copy reports itself as a redelivery (runtime.Redelivery). It is a
// job header ("queuey-redelivered" among the envelope's headers), taken
// off again before the job reaches a handler.
const headerRedelivered = "queuey-redelivered"

// redeliveryOf reports whether the delivery of m, about to go to a handler,
// is a redelivery of a job that was handed out before and never settled:
// on a quorum queue, one the broker counted a delivery of
// (x-delivery-count); on a classic queue, the copy that redelivered
// published again. It removes the mark from env, so that a retry or
// deferral of the job does not carry it on.
func (s *subscription) redeliveryOf(m *amqp.Delivery, env *runtime.Envelope) bool {
	_, marked := env.Headers[headerRedelivered]
	if marked {
		delete(env.Headers, headerRedelivered)
		if len(env.Headers) == 0 {
			env.Headers = nil
		}
	}
	if s.q.QueueType == runtime.QueueQuorum {
		return deliveryCount(m.Headers) > 0
	}
	return marked
}

// mayBeRedelivery reports whether m may be a redelivery, which
// redelivered then handles: the broker says so.
func (s *subscription) mayBeRedelivery(m *amqp.Delivery) bool {
	if s.q.QueueType == runtime.QueueQuorum {
		return deliveryCount(m.Headers) > 0
	}
	return m.Redelivered
}

// redeliveryBackoff is how long a redelivered job whose new attempt could
// not be published stays unacked before it goes back to the queue.
const redeliveryBackoff = time.Second

// redelivered counts a delivery that the broker delivered again, because an
// earlier delivery was never settled (its worker crashed, a shutdown
// timeout left it, or its ack was lost), as a new attempt, so that a job
// that crashes its worker cannot loop forever. It reports whether it took
// the delivery over; otherwise the delivery goes on to a handler, with
// env.Attempt raised on a quorum queue.
//
// A quorum queue counts deliveries itself (x-delivery-count): the attempt
// is the envelope's plus that count. A classic queue counts nothing, so a
// redelivered message is published again with its attempt raised, and the
// old copy acked once that publish is confirmed; the new copy runs when it
// comes. Past max_attempts the job goes to the dead-letter queue instead.
//
// The copy of a job whose handler still runs in the consuming worker (its
// channel closed under it: runtime.OrphanCheck) is no new attempt: it goes
// on to the worker as it came, which settles it with that run's outcome.
func (s *subscription) redelivered(m *amqp.Delivery, env *runtime.Envelope) bool {
	if env.Attempt <= 0 {
		env.Attempt = 1
	}
	env.MaxAttempts = s.q.MaxAttempts // the queue's rule, whatever the job says
	attempt := env.Attempt
	if s.q.QueueType == runtime.QueueQuorum {
		n := deliveryCount(m.Headers)
		if n <= 0 {
			return false
		}
		attempt += n
	} else {
		if !m.Redelivered {
			return false
		}
		attempt++
	}
	if s.orphans != nil && s.orphans(env) {
		return false
	}
	switch {
	case attempt > env.MaxAttempts:
		s.deadLetterUnsettled(m, env, attempt)
		return true
	case s.q.QueueType == runtime.QueueQuorum:
		env.Attempt = attempt
		return false
	default:
		s.republish(m, env, attempt)
		return true
	}
}

// republish publishes a copy of env, delivered again as m, with its
// attempt raised to attempt and marked a redelivery, and settles m once
// the copy is confirmed (settleMoved).
func (s *subscription) republish(m *amqp.Delivery, env *runtime.Envelope, attempt int) {
	next := env.Clone()
	next.Attempt = attempt
	if next.Headers == nil {
		next.Headers = make(map[string]string, 1)
	}
	next.Headers[headerRedelivered] = "1"
	msg, err := s.cs.enc.encodeCopy(next, codec.Options{Priority: m.Priority})
	if err == nil {
		ctx, cancel := s.moveCtx()
		err = s.cs.pub.publish(ctx, s.q.Name, msg)
		cancel()
	}
	s.settleMoved(m, env, err, "publish it again with its attempt raised")
}

// deadLetterUnsettled moves env, delivered again as m past its last
// attempt (attempt is one more), to the dead-letter queue, or rejects it
// without one.
func (s *subscription) deadLetterUnsettled(m *amqp.Delivery, env *runtime.Envelope, attempt int) {
	runs := attempt - 1
	reason := errs.Unsettled(runs, env.MaxAttempts)
	s.cs.log.Error("queuey: job dead-lettered", "queue", s.q.Name, "job_id", env.ID, "attempt", runs, "max_attempts", env.MaxAttempts, "reason", reason)
	if s.cs.noDead {
		if err := m.Reject(false); err == nil {
			s.acks.Settled(m.DeliveryTag)
			env.Attempt, env.LastError = runs, reason
			s.deadLettered(env, "", reason)
		}
		return
	}
	next := env.Clone()
	next.Attempt = runs
	next.LastError = reason
	delete(next.Headers, headerRedelivered)
	msg, err := s.cs.enc.encodeDead(next, reason)
	if err == nil {
		ctx, cancel := s.moveCtx()
		err = s.cs.dead.publish(ctx, s.q.Name, msg)
		cancel()
	}
	if s.settleMoved(m, env, err, "move it to the dead-letter queue") {
		s.deadLettered(next, "", reason)
	}
}

// settleMoved acks m once its new copy is published (err nil), or puts it
// back on the queue after a backoff when that failed.
// It reports whether m was acked.
func (s *subscription) settleMoved(m *amqp.Delivery, env *runtime.Envelope, err error, what string) bool {
	if err == nil {
		if aerr := s.acks.Ack(m.DeliveryTag); aerr != nil {
			s.cs.log.Warn("queuey: ack of a redelivered job after publishing its new copy failed; it will be delivered again", "queue", s.q.Name, "job_id", env.ID, "error", aerr)
			return false
		}
		return true
	}
	s.cs.log.Error("queuey: redelivered job: could not "+what+"; it goes back to the queue after a backoff", "queue", s.q.Name, "job_id", env.ID, "error", err, "requeue_in", redeliveryBackoff)
	s.requeueAfter(m, redeliveryBackoff)
	return false
}

// deliveryCount reads x-delivery-count, whatever integer type it came as.
func deliveryCount(h amqp.Table) int {
	switch v := h[headerDeliveryCount].(type) {
	case int64:
		return int(v)
	case int32:
		return int(v)
	case int16:
		return int(v)
	case int8:
		return int(v)
	case int:
		return v
	case uint8:
		return int(v)
	case uint16:
		return int(v)
	case uint32:
		return int(v)
	}
	return 0
}

var _ runtime.Redelivery = (*delivery)(nil)

// Redelivered reports whether the job was handed out before and never
// settled (its worker crashed, lost its connection, or a failed settle put
// it back), so that the worker's observers are told OutcomeRedelivered. On
// a classic queue the broker's redelivery was published again as a new
// attempt; the delivery of that copy is the one that reports true.
func (d *delivery) Redelivered() bool { return d.redelivered }
