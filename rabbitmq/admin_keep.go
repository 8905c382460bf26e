package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// keeper keeps the letters a scan reads from a quorum dead-letter queue
// without giving any back to it, since each return counts a delivery
// towards the queue's delivery limit (see the top of admin_scan.go). A
// letter kept is published again at the tail of the queue (mandatory,
// confirmed), and the original is acked only once its copy is confirmed:
// a failure in between leaves both, a duplicate at worst, never neither.
// Copies go out in the order the letters were read, so a scan that goes
// through the whole queue leaves the letters in the order they began,
// each with its delivery count at zero.
//
// The scan never receives more messages than it counted at its start:
// with a prefetch of p, the broker delivers at most p more than were
// acked, so while the consumer runs at most want-p acks are sent, and the
// rest wait until it is cancelled. The copies, which queue up behind the
// letters, are therefore never delivered to the scan that made them, and
// neither is a letter that arrives while it runs. A copy carries the
// scan's consumer tag in headerKeptBy, so that a scan that reaches its own
// copies anyway (someone else took letters meanwhile) stops there.
type keeper struct {
	s         *deadScan
	prefetch  int
	budget    int          // acks that may be sent while the consumer runs
	acked     int          // acks sent while the consumer runs
	deferred  []uint64     // acks past the budget, sent once the consumer is cancelled
	stalled   bool         // acks wait until the consumer is cancelled
	stopped   bool         // the consumer is cancelled
	delivered int          // messages delivered to the scan
	read      []readLetter // letters read and not yet acked, in the order read
	back      []uint64     // the scan's own copies it received: they go back as it ends
	err       error        // why copying stopped
}

// readLetter is a letter a scan has read and not yet acked.
type readLetter struct {
	m     *amqp.Delivery
	state letterState
}

type letterState int

const (
	undecided letterState = iota
	kept                  // to be copied, then acked
	settled               // acked: taken by the caller, or copied
	failed                // its copy failed: it goes back as the scan ends
)

// headerKeptBy names the scan that last kept a letter of a quorum
// dead-letter queue, by its consumer tag.
const headerKeptBy = "x-queuey-kept-by"

// Sizes of a scan of a quorum dead-letter queue: its prefetch, which
// bounds the letters held in memory, and how many copies are published at
// once before their confirms are awaited.
const (
	keepPrefetch = 1024
	keepBatch    = 256
)

// keepTimeout bounds how long a batch of copies waits for its confirms. A
// batch in flight is waited for even when the caller's context has ended:
// a copy whose confirm was not awaited may have been stored, and giving
// its original back would then duplicate the letter.
const keepTimeout = 10 * time.Second

// finishTimeout bounds how long the end of a scan waits for the broker to
// cancel its consumer and hand over what it had sent.
const finishTimeout = 5 * time.Second

func newKeeper(s *deadScan, prefetch int) *keeper {
	return &keeper{s: s, prefetch: prefetch, budget: s.want - prefetch}
}

// ownCopy reports whether m is a copy this scan made; if so, m goes back to
// the queue as the scan ends.
func (k *keeper) ownCopy(m *amqp.Delivery) bool {
	if by, _ := m.Headers[headerKeptBy].(string); by != k.s.consumer {
		return false
	}
	k.delivered++
	k.back = append(k.back, m.DeliveryTag)
	return true
}

func (k *keeper) add(m *amqp.Delivery) {
	k.delivered++
	k.read = append(k.read, readLetter{m: m})
}

// find returns the letter read with delivery tag tag, or nil. The caller
// decides on a letter soon after reading it, so the search starts with the
// last one read.
func (k *keeper) find(tag uint64) *readLetter {
	for i := len(k.read) - 1; i >= 0; i-- {
		if k.read[i].m.DeliveryTag == tag {
			return &k.read[i]
		}
	}
	return nil
}

func (k *keeper) keep(tag uint64) {
	if h := k.find(tag); h != nil && h.state == undecided {
		h.state = kept
	}
}

func (k *keeper) take(tag uint64) error {
	h := k.find(tag)
	if h == nil || h.state != undecided {
		return fmt.Errorf("%s: letter %d is not the scan's to remove", k.s.what, tag)
	}
	if err := k.ack(tag); err != nil {
		return err
	}
	h.state = settled
	return nil
}

// ack acks tag, or defers it past the budget until the consumer is
// cancelled.
func (k *keeper) ack(tag uint64) error {
	if !k.stopped {
		if k.stalled || k.acked >= k.budget {
			k.deferred = append(k.deferred, tag)
			return nil
		}
		k.acked++
	}
	if err := k.s.ch.Ack(tag, false); err != nil {
		return k.s.ackError(err)
	}
	return nil
}

// flush copies the kept letters at the front of read, in order, and acks
// each original whose copy is confirmed. Unless all is set it waits until
// there are keepBatch of them, or the prefetch is used up. A letter not
// yet decided stops it: the letters behind it wait, to keep their order.
func (k *keeper) flush(ctx context.Context, all bool) error {
	if k.err != nil {
		return k.err
	}
	for {
		n, copies := 0, 0
		for n < len(k.read) && k.read[n].state != undecided && copies < keepBatch {
			if k.read[n].state == kept {
				copies++
			}
			n++
		}
		if copies == 0 {
			k.drop(n)
			return nil
		}
		if copies < keepBatch && !all && len(k.read) < k.prefetch {
			return nil
		}
		if err := k.copy(ctx, k.read[:n]); err != nil {
			k.err = err
			return err
		}
		k.drop(n)
	}
}

// drop forgets the first n letters of read, which are acked, or go back
// as the channel closes.
func (k *keeper) drop(n int) {
	clear(k.read[:n]) // lets their bodies go
	k.read = k.read[n:]
}

// copy publishes a copy of each kept letter of hs and acks the letters
// whose copies are confirmed; it marks the others failed.
func (k *keeper) copy(ctx context.Context, hs []readLetter) error {
	msgs := make([]outMsg, 0, len(hs))
	for _, h := range hs {
		if h.state == kept {
			out := outMsg{key: k.s.dead, msg: k.keptCopy(h.m)}
			if k.s.copyTo != "" {
				out.exchange, out.key = k.s.copyTo, h.m.RoutingKey
			}
			msgs = append(msgs, out)
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	errs := k.s.o.pub.publishBatch(wctx, msgs)
	var first error
	i := 0
	for j := range hs {
		h := &hs[j]
		if h.state != kept {
			continue
		}
		err := errs[i]
		i++
		if err == nil {
			err = k.ack(h.m.DeliveryTag)
		}
		h.state = settled
		if err != nil {
			h.state = failed
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return fmt.Errorf("%s: keep a letter of %q in place: %w", k.s.what, k.s.dead, first)
	}
	return nil
}

// keptCopy is the copy that keeps letter m: m with the delivery counts the
// broker adds left out, so that the copy starts at zero, and this scan's
// consumer tag in headerKeptBy.
func (k *keeper) keptCopy(m *amqp.Delivery) amqp.Publishing {
	h := maps.Clone(m.Headers)
	if h == nil {
		h = amqp.Table{}
	}
	delete(h, "x-delivery-count")
	delete(h, "x-acquired-count")
	h[headerKeptBy] = k.s.consumer
	return republish(m, h)
}

// finish ends the scan: it reads and keeps the rest of the queue, unless
// ctx has ended or copying failed; cancels the consumer; keeps what the
// broker had sent by then; copies every letter kept and acks it; and
// closes the channel once the queue has applied every ack. Only reading
// the rest honours ctx: what the scan holds is copied even when ctx has
// ended, within keepTimeout per batch, so that none of it goes back. Once
// copying failed, what the scan holds goes back to the queue (nack with
// requeue), which counts one delivery of each.
func (k *keeper) finish(ctx context.Context) error {
	s := k.s
	for i := range k.read {
		if k.read[i].state == undecided {
			k.read[i].state = kept
		}
	}
	var err error
	for k.err == nil && ctx.Err() == nil {
		m, ok, nerr := s.next(ctx)
		if nerr != nil {
			if ctx.Err() == nil {
				err = nerr
			}
			break
		}
		if !ok {
			break
		}
		k.keep(m.DeliveryTag)
	}
	if serr := k.stop(ctx); serr != nil {
		// Whatever the scan holds may be given back by the broker as it
		// is: copying it now could duplicate it.
		k.err, err = serr, errors.Join(err, serr)
	}
	if k.err == nil {
		err = errors.Join(err, k.flush(ctx, true))
	}
	if serr := k.settleRest(); serr != nil {
		return errors.Join(err, serr, s.ch.Close())
	}
	return errors.Join(err, k.awaitLetGo(ctx), s.ch.Close())
}

// stop cancels the consumer and takes in what the broker had sent before
// the cancel, keeping each letter. It first takes in every delivery the
// broker will make before the consumer runs out of credit, holding back
// acks meanwhile so that it gets no more, because the client library drops
// a delivery that arrives for a cancelled consumer, and the broker gives
// such a letter back as the channel closes, counting a delivery. Only when
// someone else took letters meanwhile can fewer come than the credit
// allows: then it waits finishTimeout for them and cancels anyway.
func (k *keeper) stop(ctx context.Context) error {
	s := k.s
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	k.stalled = true
	due := min(s.want, k.acked+k.prefetch)
	if s.dry {
		due = k.delivered // the queue had no more: nothing is on its way
	}
credit:
	for k.delivered < due {
		select {
		case m, ok := <-s.deliveries:
			if !ok {
				return fmt.Errorf("%s: the channel reading %q closed", s.what, s.dead)
			}
			k.receive(&m)
		case <-wctx.Done():
			break credit
		}
	}
	_, err := callCtx(wctx, func() (struct{}, error) { return struct{}{}, s.ch.Cancel(s.consumer, false) }, nil)
	if err != nil {
		return brokerError(fmt.Sprintf("%s: stop reading %q", s.what, s.dead), err)
	}
	k.stopped = true
	for {
		select {
		case m, ok := <-s.deliveries:
			if !ok {
				return nil
			}
			k.receive(&m)
		case <-wctx.Done():
			return fmt.Errorf("%s: the broker did not end the read of %q within %v", s.what, s.dead, finishTimeout)
		}
	}
}

// receive keeps m, delivered after the caller stopped reading, unless it
// is one of the scan's own copies.
func (k *keeper) receive(m *amqp.Delivery) {
	if !k.ownCopy(m) {
		k.add(m)
		k.keep(m.DeliveryTag)
	}
}

// settleRest sends the acks deferred past the budget, and gives back what
// the scan holds and did not settle: letters whose copies failed, or that
// were never copied because copying had failed, and the scan's own
// copies.
func (k *keeper) settleRest() error {
	s := k.s
	back := k.back
	for _, h := range k.read {
		if h.state != settled {
			back = append(back, h.m.DeliveryTag)
		}
	}
	for _, tag := range k.deferred {
		if err := s.ch.Ack(tag, false); err != nil {
			return s.ackError(err)
		}
	}
	for _, tag := range back {
		if err := s.ch.Nack(tag, false, true); err != nil {
			return brokerError(fmt.Sprintf("%s: put a letter back on %q", s.what, s.dead), err)
		}
	}
	return nil
}

// awaitLetGo waits, at most finishTimeout, until the queue has applied every
// settle of the scan. The channel must not close before: a quorum queue's
// client in the broker holds back settles while many are in flight and
// drops those it still holds when the channel closes, and the queue then
// gives their letters back, each counting a delivery, on top of their
// copies. The queue keeps a cancelled consumer until all it held is
// settled, and a passive declare counts it, so no consumer means all is
// applied.
func (k *keeper) awaitLetGo(ctx context.Context) error {
	s := k.s
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	for {
		q, err := callCtx(ctx, func() (amqp.Queue, error) {
			return s.ch.QueueDeclarePassive(s.dead, true, false, false, false, nil)
		}, nil)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %q did not apply the read's acks within %v; letters not yet removed come back as the read ends, beside their copies", s.what, s.dead, finishTimeout)
		case err != nil || q.Consumers == 0:
			return nil // deleted meanwhile, or let go
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond): // poll interval: the broker sends no notice
		}
	}
}
