// Package acker coalesces the acks of a consumer's channel into multiple
// acks, and refuses a second settle of one delivery before it reaches the
// wire.
package acker

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ackStragglerDelay is how long an ack waits behind an unsettled lower
// delivery, after the gathering flush left it waiting, before it is sent
// on its own: up to ackGatherDelay+ackStragglerDelay after it was done.
const ackStragglerDelay = 5 * time.Millisecond

// ackGatherDelay is how long a done delivery's ack waits for others to
// join it, unless half the prefetch is waiting already. An ack is a write
// to the socket, which on loopback costs the writer 20-30µs of CPU here
// (it runs the receiving side's TCP path too), and work for the broker;
// gathering for 2ms sent one ack for about every 10 jobs of a busy queue
// in the benchmarks, instead of one for every 4-5. The broker holds those deliveries as
// unacked a little longer: they count against the prefetch (which is why
// half of it sends at once) and come back if the connection dies first.
const ackGatherDelay = 2 * time.Millisecond

// errAlreadySettled is returned for a second settle of one delivery.
var errAlreadySettled = errors.New("delivery already settled")

// Sender is what an acker sends on: an *amqp.Channel.
type Sender interface {
	Ack(tag uint64, multiple bool) error
}

// tagRange is the delivery tags lo..hi, inclusive.
type tagRange struct{ lo, hi uint64 }

// Acker coalesces the acks of one subscription's channel. Delivery tags
// on a channel count up from 1, one per delivery; once every tag up to n is
// done or otherwise settled, one basic.ack with multiple=true for the
// highest of them settles them all, in one frame and one write instead of
// one each. An ack is sent at most ackGatherDelay after a tag is done
// (when the gathering timer it started, or one already running, fires), or
// at once when half the prefetch is done and waiting, so that it covers as
// many as it can. A done tag behind an unsettled lower one (a slow
// handler) is acked on its own once ackStragglerDelay more passes or half
// the prefetch waits, so a straggler never holds the window shut.
//
// Memory is bounded by the prefetch, however long a delivery stays
// unsettled: waiting tags are deliveries the broker still counts against
// the prefetch, and tags settled above the lowest unsettled one are kept as
// ranges, one per gap.
//
// A nack or reject must be on the wire before its tag is marked settled
// here: a multiple ack sent later then cannot cover it.
type Acker struct {
	ch        Sender
	threshold int

	mu      sync.Mutex
	low     uint64              // lowest tag not known settled
	unsent  map[uint64]struct{} // done, ack not yet sent
	claimed map[uint64]struct{} // a nack or reject on its way to the wire
	ranges  []tagRange          // settled tags above low, sorted, disjoint, not adjacent
	err     error               // why acks can no longer be sent
	closing bool
	stalled bool // acks wait for Unstall (close sends them anyway)
	// gathering says the gathering timer runs: it will flush what
	// waits, so an ack below the threshold need not flush.
	gathering bool
	// straggling says the straggler timer runs.
	straggling bool

	// The timers run their flush on a goroutine of their own, and only
	// while they fire: an idle subscription's acker holds no goroutine.
	gather, straggle *time.Timer
	// flushing is held while a flush runs: one at a time, so that a
	// multiple ack never goes out after a higher one.
	flushing sync.Mutex
}

// New returns an Acker sending on ch.
func New(ch Sender, prefetch int) *Acker {
	a := &Acker{
		ch:        ch,
		threshold: max(1, prefetch/2),
		low:       1,
		unsent:    map[uint64]struct{}{},
		claimed:   map[uint64]struct{}{},
	}
	a.gather = time.AfterFunc(time.Hour, a.gathered)
	a.gather.Stop()
	a.straggle = time.AfterFunc(time.Hour, a.straggled)
	a.straggle.Stop()
	return a
}

// makeAcker returns an acker whose timers never start a flush, for tests
// that flush by hand.
func makeAcker(ch Sender, prefetch int) *Acker {
	a := New(ch, prefetch)
	a.gathering, a.straggling = true, true // as if running: nothing starts them
	return a
}

// Ack marks tag done; the flusher sends the ack. It fails once acks can no
// longer be sent (the error wraps amqp.ErrClosed: the broker delivers the
// message again) and for a tag already settled.
func (a *Acker) Ack(tag uint64) error {
	a.mu.Lock()
	if err := a.usableLocked(tag); err != nil {
		a.mu.Unlock()
		return err
	}
	a.unsent[tag] = struct{}{}
	flush := a.nextLocked()
	a.mu.Unlock()
	if flush {
		a.flushAndArm(false)
	}
	return nil
}

// nextLocked starts the gathering timer when acks wait and it is not
// running, and reports whether enough wait (half the prefetch) to send
// them now. It does neither while acks are stalled. a.mu must be held.
func (a *Acker) nextLocked() (flush bool) {
	if a.stalled || a.closing || a.err != nil || len(a.unsent) == 0 {
		return false
	}
	if len(a.unsent) >= a.threshold {
		return true
	}
	if !a.gathering {
		// Let more handlers finish first, so that one ack covers them
		// all.
		a.gathering = true
		a.gather.Reset(ackGatherDelay)
	}
	return false
}

// gathered is the gathering timer's: it sends what waits.
func (a *Acker) gathered() { a.fired(&a.gathering, false) }

// straggled is the straggler timer's: it sends what waits, stragglers
// too.
func (a *Acker) straggled() { a.fired(&a.straggling, true) }

// fired is a timer's end: running, the timer's flag under a.mu, is
// cleared, and what waits is flushed (force: stragglers too) unless acks
// are stalled or closing.
func (a *Acker) fired(running *bool, force bool) {
	a.mu.Lock()
	*running = false
	stop := a.stalled || a.closing
	a.mu.Unlock()
	if !stop {
		a.flushAndArm(force)
	}
}

// flushAndArm flushes and starts the straggler timer when tags are left
// waiting behind an unsettled lower one.
func (a *Acker) flushAndArm(force bool) {
	a.flushing.Lock()
	left := a.flush(force)
	a.flushing.Unlock()
	if !left {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.straggling && !a.closing {
		a.straggling = true
		a.straggle.Reset(ackStragglerDelay)
	}
}

// Claim reserves tag for a nack or reject, which the caller sends next and
// then reports with Settled, or gives up with Unclaim. It fails as Ack does
// for a tag already settled, acked or claimed, so that a second settle never
// reaches the wire (the broker would close the channel with 406).
func (a *Acker) Claim(tag uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.usableLocked(tag); err != nil {
		return err
	}
	a.claimed[tag] = struct{}{}
	return nil
}

// Unclaim gives back a claim whose nack or reject was not sent.
func (a *Acker) Unclaim(tag uint64) {
	a.mu.Lock()
	delete(a.claimed, tag)
	a.mu.Unlock()
}

// Settled marks tag as settled on the wire by a nack or reject.
func (a *Acker) Settled(tag uint64) {
	a.mu.Lock()
	delete(a.claimed, tag)
	if tag >= a.low && !a.isSettledLocked(tag) {
		delete(a.unsent, tag)
		a.addSettledLocked(tag)
	}
	flush := a.nextLocked()
	a.mu.Unlock()
	if flush {
		a.flushAndArm(false)
	}
}

func (a *Acker) usableLocked(tag uint64) error {
	switch {
	case a.err != nil:
		return a.err
	case a.closing:
		return fmt.Errorf("%w: consumer closed", amqp.ErrClosed)
	case tag < a.low || a.isSettledLocked(tag):
		return fmt.Errorf("settle of delivery tag %d: %w", tag, errAlreadySettled)
	}
	if _, ok := a.unsent[tag]; ok {
		return fmt.Errorf("settle of delivery tag %d: %w", tag, errAlreadySettled)
	}
	if _, ok := a.claimed[tag]; ok {
		return fmt.Errorf("settle of delivery tag %d: %w", tag, errAlreadySettled)
	}
	return nil
}

// isSettledLocked reports whether tag is in a settled range.
func (a *Acker) isSettledLocked(tag uint64) bool {
	i := sort.Search(len(a.ranges), func(i int) bool { return a.ranges[i].hi >= tag })
	return i < len(a.ranges) && a.ranges[i].lo <= tag
}

// addSettledLocked adds tag to the settled ranges, merging neighbours.
func (a *Acker) addSettledLocked(tag uint64) {
	i := sort.Search(len(a.ranges), func(i int) bool { return a.ranges[i].hi >= tag })
	joinLeft := i > 0 && a.ranges[i-1].hi+1 == tag
	joinRight := i < len(a.ranges) && a.ranges[i].lo == tag+1
	switch {
	case joinLeft && joinRight:
		a.ranges[i-1].hi = a.ranges[i].hi
		a.ranges = slices.Delete(a.ranges, i, i+1)
	case joinLeft:
		a.ranges[i-1].hi = tag
	case joinRight:
		a.ranges[i].lo = tag
	default:
		a.ranges = slices.Insert(a.ranges, i, tagRange{tag, tag})
	}
}

// Gone records that the channel is gone: acks fail from now on.
func (a *Acker) Gone(e error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = fmt.Errorf("%w: channel closed: %v", amqp.ErrClosed, e)
	}
}

// flush sends what can be sent: one multiple ack for the settled prefix,
// and single acks for waiting tags above it when force is set or too many
// wait. It reports whether tags are left waiting.
func (a *Acker) flush(force bool) (left bool) {
	a.mu.Lock()
	if a.err != nil {
		a.mu.Unlock()
		return false
	}
	var multi uint64
	for {
		if _, ok := a.unsent[a.low]; ok {
			delete(a.unsent, a.low)
			multi = a.low
			a.low++
			continue
		}
		if len(a.ranges) > 0 && a.ranges[0].lo == a.low {
			a.low = a.ranges[0].hi + 1
			a.ranges = a.ranges[1:]
			continue
		}
		break
	}
	var singles []uint64
	if len(a.unsent) > 0 && (force || len(a.unsent) >= a.threshold) {
		for tag := range a.unsent {
			singles = append(singles, tag)
		}
		slices.Sort(singles)
		clear(a.unsent)
		for _, tag := range singles {
			a.addSettledLocked(tag)
		}
	}
	left = len(a.unsent) > 0
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
			a.err = fmt.Errorf("%w: sending an ack failed: %v", amqp.ErrClosed, err)
		}
		a.mu.Unlock()
	}
	return left
}

// Stall keeps acks from going out until Unstall: settles are recorded, and
// the broker, which sends a consumer no more than its prefetch unacked,
// sends no delivery for them meanwhile.
func (a *Acker) Stall() {
	a.mu.Lock()
	a.stalled = true
	a.mu.Unlock()
}

// Unstall lets the acks stalled go out.
func (a *Acker) Unstall() {
	a.mu.Lock()
	a.stalled = false
	flush := a.nextLocked()
	a.mu.Unlock()
	if flush {
		a.flushAndArm(false)
	}
}

// SettledOnWire returns how many delivery tags are settled towards the
// broker: acked, nacked or rejected (or about to be, in a flush under
// way).
func (a *Acker) SettledOnWire() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.low - 1
	for _, r := range a.ranges {
		n += r.hi - r.lo + 1
	}
	return n
}

// Close sends every ack still waiting and stops the flusher. Call it
// before the channel closes, so that done work is not delivered again. It
// is safe to call twice.
func (a *Acker) Close() {
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	a.gather.Stop()
	a.straggle.Stop()
	a.flushing.Lock()
	a.flush(true)
	a.flushing.Unlock()
}
