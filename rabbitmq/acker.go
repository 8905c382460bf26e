package rabbitmq

import (
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ackStragglerDelay is how long an ack waits behind an unsettled lower
// delivery before it is sent on its own.
const ackStragglerDelay = 5 * time.Millisecond

// Tag states in an acker.
const (
	ackPending = iota + 1 // done, ack not yet sent
	ackSettled            // acked, nacked or rejected on the wire already
)

// acker coalesces the acks of one subscription's channel. Delivery tags
// on a channel count up from 1, one per delivery; once every tag up to n is
// done or otherwise settled, one basic.ack with multiple=true for the
// highest of them settles them all, in one frame and one write instead of
// one each. A done tag behind an unsettled lower one (a slow handler) is
// acked on its own once ackStragglerDelay passes or half the prefetch
// waits, so a straggler never holds the window shut.
//
// A nack or reject must be on the wire before its tag is marked settled
// here: a multiple ack sent later then cannot cover it.
type acker struct {
	ch        *amqp.Channel
	threshold int

	mu      sync.Mutex
	low     uint64 // lowest tag not yet known settled
	state   map[uint64]int
	beyond  int // ackPending tags above low
	err     error
	closing bool

	kick chan struct{}
	done chan struct{}
}

func newAcker(ch *amqp.Channel, prefetch int) *acker {
	a := &acker{
		ch:        ch,
		threshold: max(1, prefetch/2),
		low:       1,
		state:     map[uint64]int{},
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	go a.run()
	return a
}

// ack marks tag done; the flusher sends the ack. It fails only once a send
// on the channel failed or the acker closed: the broker then delivers the
// message again.
func (a *acker) ack(tag uint64) error {
	a.mu.Lock()
	if a.err != nil || a.closing {
		err := a.err
		a.mu.Unlock()
		if err == nil {
			err = amqp.ErrClosed
		}
		return err
	}
	a.state[tag] = ackPending
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	return nil
}

// settled marks tag as settled on the wire by a nack or reject.
func (a *acker) settled(tag uint64) {
	a.mu.Lock()
	a.state[tag] = ackSettled
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *acker) run() {
	defer close(a.done)
	var straggle *time.Timer
	var straggleC <-chan time.Time
	for {
		force := false
		select {
		case <-a.kick:
		case <-straggleC:
			force, straggleC = true, nil
		}
		a.mu.Lock()
		closing := a.closing
		a.mu.Unlock()
		left := a.flush(force || closing)
		if closing {
			if straggle != nil {
				straggle.Stop()
			}
			return
		}
		if left && straggleC == nil {
			if straggle == nil {
				straggle = time.NewTimer(ackStragglerDelay)
			} else {
				straggle.Reset(ackStragglerDelay)
			}
			straggleC = straggle.C
		}
	}
}

// flush sends what can be sent: one multiple ack for the settled prefix,
// and single acks for done tags above it when force is set or too many
// wait. It reports whether done tags are left waiting.
func (a *acker) flush(force bool) (left bool) {
	a.mu.Lock()
	var multi uint64
	for {
		st, ok := a.state[a.low]
		if !ok {
			break
		}
		if st == ackPending {
			multi = a.low
		}
		delete(a.state, a.low)
		a.low++
	}
	a.beyond = 0
	for _, st := range a.state {
		if st == ackPending {
			a.beyond++
		}
	}
	var singles []uint64
	if a.beyond > 0 && (force || a.beyond >= a.threshold) {
		for tag, st := range a.state {
			if st == ackPending {
				singles = append(singles, tag)
				a.state[tag] = ackSettled
			}
		}
		a.beyond = 0
	}
	left = a.beyond > 0
	a.mu.Unlock()

	var err error
	if multi > 0 {
		err = a.ch.Ack(multi, true)
	}
	for _, tag := range singles {
		if err != nil {
			break
		}
		err = a.ch.Ack(tag, false)
	}
	if err != nil {
		a.mu.Lock()
		if a.err == nil {
			a.err = err
		}
		a.mu.Unlock()
	}
	return left
}

// close sends every ack still waiting and stops the flusher. Call it
// before the channel closes, so that done work is not delivered again.
func (a *acker) close() {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		<-a.done
		return
	}
	a.closing = true
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	<-a.done
}
