package rabbitmq

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
)

// poison moves a message that is not a valid envelope to the dead-letter
// queue with the reason in a header, or rejects it when there is none. It
// never ends the stream.
func (s *subscription) poison(m *amqp.Delivery, derr error) {
	reason := fmt.Sprintf("message on queue %q is not a valid envelope: %v", s.q.Name, derr)
	if s.cs.noDead {
		s.cs.log.Error("queuey: invalid message rejected (no dead-letter queue declared)", "queue", s.q.Name, "message_id", m.MessageId, "error", derr)
		if err := m.Reject(false); err != nil {
			s.cs.log.Error("queuey: reject invalid message", "queue", s.q.Name, "error", err)
			return
		}
		s.acks.Settled(m.DeliveryTag)
		s.deadLettered(nil, m.MessageId, reason)
		return
	}
	dead := s.cs.names.Dead(s.q.Name).Name
	msg, dropped := poisonCopy(m, s.q.Name, reason, deadNow(), s.cs.enc.fit())
	ctx, cancel := s.moveCtx()
	defer cancel()
	if err := s.cs.dead.publish(ctx, s.q.Name, msg); err != nil {
		s.poisonFailed(m, dead, err)
		return
	}
	s.poisonFails = 0
	attrs := []any{"queue", s.q.Name, "dead_letter_queue", dead, "message_id", m.MessageId, "error", derr}
	if len(dropped) > 0 {
		attrs = append(attrs, "dropped_headers", dropped)
	}
	s.cs.log.Error("queuey: invalid message moved to dead-letter queue", attrs...)
	if err := s.acks.Ack(m.DeliveryTag); err != nil {
		s.cs.log.Error("queuey: ack invalid message after moving it", "queue", s.q.Name, "error", err)
		return // it comes back, and is moved and told of again
	}
	s.deadLettered(nil, m.MessageId, reason)
}

// Headers that keep the properties of an invalid message that cannot
// travel to the dead-letter queue as they were.
const (
	headerOriginalExpiration = "x-queuey-original-expiration"
	headerOriginalUserID     = "x-queuey-original-user-id"
)

// poisonCopy is the publish that moves invalid message m of queue to its
// dead-letter queue: every property and header of m, plus the reason, the
// time at (when it is dead-lettered) and the queue in headers, persistent.
// Two properties move to headers: the expiration, which would make the
// dead letter expire, and the user id, which the broker checks against the
// publishing connection's user and refuses (closing the channel) when
// another user set it.
//
// The copy's content header must fit in one frame of lim (the broker
// would close the publishing connection otherwise, and the message would
// never move), but m's headers may have filled m's frame already: then the
// largest of them are dropped, until the copy fits, and the reason says
// which and why. The names of the dropped headers are returned.
func poisonCopy(m *amqp.Delivery, queue, reason string, at time.Time, lim codec.Limits) (amqp.Publishing, []string) {
	h := make(amqp.Table, len(m.Headers)+5)
	for k, v := range m.Headers {
		h[k] = v
	}
	h[codec.HeaderDeadReason] = reason
	h[codec.HeaderDeadAt] = codec.FormatDeadAt(at)
	h[codec.HeaderQueue] = queue
	msg := republish(m, h)
	if lim.FitsHeader(&msg) {
		return msg, nil
	}
	return msg, dropHeaders(&msg, reason, lim)
}

// republish is the publish of a copy of m with headers h instead of m's:
// every property of m, persistent. Two properties move to h: the
// expiration, which would make the copy expire, and the user id, which the
// broker checks against the publishing connection's user and refuses
// (closing the channel) when another user set it.
func republish(m *amqp.Delivery, h amqp.Table) amqp.Publishing {
	if m.Expiration != "" {
		h[headerOriginalExpiration] = m.Expiration
	}
	if m.UserId != "" {
		h[headerOriginalUserID] = m.UserId
	}
	return amqp.Publishing{
		Headers:         h,
		ContentType:     m.ContentType,
		ContentEncoding: m.ContentEncoding,
		DeliveryMode:    amqp.Persistent,
		Priority:        m.Priority,
		CorrelationId:   m.CorrelationId,
		ReplyTo:         m.ReplyTo,
		MessageId:       m.MessageId,
		Timestamp:       m.Timestamp,
		Type:            m.Type,
		AppId:           m.AppId,
		Body:            m.Body,
	}
}

// poisonHeader is one of an invalid message's own headers and its size on
// the wire.
type poisonHeader struct {
	name string
	size int
}

// dropHeaders drops the largest of msg's headers that the invalid message
// brought, those poisonCopy did not add, until msg fits lim with a reason
// (reason, then which headers were dropped) that says so. The reason is
// shortened if even that is not enough. It returns the dropped names.
func dropHeaders(msg *amqp.Publishing, reason string, lim codec.Limits) []string {
	var own []poisonHeader
	for k, v := range msg.Headers {
		switch k {
		case codec.HeaderDeadReason, codec.HeaderDeadAt, codec.HeaderQueue, headerOriginalExpiration, headerOriginalUserID:
		default:
			own = append(own, poisonHeader{k, codec.EntrySize(k, v)})
		}
	}
	slices.SortFunc(own, func(a, b poisonHeader) int {
		return cmp.Or(cmp.Compare(b.size, a.size), strings.Compare(a.name, b.name))
	})
	room := lim.HeaderRoom()
	rest := codec.HeaderSize(msg) - codec.EntrySize(codec.HeaderDeadReason, reason) // all but the reason
	var dropped []poisonHeader
	full := reason
	for _, d := range own {
		if rest+codec.EntrySize(codec.HeaderDeadReason, full) <= room {
			break
		}
		delete(msg.Headers, d.name)
		rest -= d.size
		dropped = append(dropped, d)
		full = droppedReason(reason, dropped, lim)
	}
	if over := rest + codec.EntrySize(codec.HeaderDeadReason, full) - room; over > 0 {
		full = codec.Shorten(full, len(full)-over)
	}
	msg.Headers[codec.HeaderDeadReason] = full
	names := make([]string, len(dropped))
	for i, d := range dropped {
		names[i] = d.name
	}
	return names
}

// maxDroppedNamed is how many dropped headers a dead reason names; it
// counts the rest.
const maxDroppedNamed = 8

// droppedReason is reason, followed by which of the invalid message's
// headers were dropped from its dead-letter copy and why.
func droppedReason(reason string, dropped []poisonHeader, lim codec.Limits) string {
	var b strings.Builder
	b.WriteString(reason)
	fmt.Fprintf(&b, "; %d of its headers dropped, the largest first, so that the copy's content header fits in one frame (frame_max %d): ", len(dropped), lim.FrameMax)
	for i, d := range dropped[:min(len(dropped), maxDroppedNamed)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q (%d bytes)", errs.Clip(d.name), d.size)
	}
	if n := len(dropped) - maxDroppedNamed; n > 0 {
		fmt.Fprintf(&b, " and %d more", n)
	}
	return b.String()
}

// Backoff of an invalid message that could not be moved to the dead-letter
// queue, before it goes back to the queue.
const (
	poisonBackoffMin = time.Second
	poisonBackoffMax = 30 * time.Second
)

// poisonBackoff is the wait after the nth consecutive failure to move an
// invalid message: 1s, 2s, 4s, ... up to 30s.
func poisonBackoff(n int) time.Duration {
	d := poisonBackoffMin
	for i := 1; i < n && d < poisonBackoffMax; i++ {
		d *= 2
	}
	return min(d, poisonBackoffMax)
}

// poisonFailed puts back an invalid message that could not be moved to
// dead, not at once, which would make it come straight back in a hot
// loop, but after a backoff that grows with every consecutive failure. The
// message stays unacked until then, so it holds a prefetch slot; the
// delivery loop goes on. The log is rate-limited: the 1st, 2nd, 4th, 8th...
// consecutive failure, and at least one a minute.
func (s *subscription) poisonFailed(m *amqp.Delivery, dead string, err error) {
	s.poisonFails++
	n := s.poisonFails
	backoff := poisonBackoff(n)
	if n&(n-1) == 0 || time.Since(s.poisonLogged) >= time.Minute {
		s.poisonLogged = time.Now()
		s.cs.log.Error("queuey: could not move invalid message to its dead-letter queue; it goes back to the queue after a backoff",
			"queue", s.q.Name, "dead_letter_queue", dead, "message_id", m.MessageId, "error", err,
			"consecutive_failures", n, "requeue_in", backoff)
	}
	s.requeueAfter(m, backoff)
}
