package acker

import (
	"errors"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// wait bounds the waits of these tests.
const wait = 10 * time.Second

type ackFrame struct {
	tag      uint64
	multiple bool
}

// frames records the acks an acker sends.
type frames struct {
	mu   sync.Mutex
	sent []ackFrame
	fail error
}

func (f *frames) Ack(tag uint64, multiple bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.sent = append(f.sent, ackFrame{tag, multiple})
	return nil
}

func (f *frames) take() []ackFrame {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent
	f.sent = nil
	return out
}

func mustAck(t *testing.T, a *Acker, tags ...uint64) {
	t.Helper()
	for _, tag := range tags {
		if err := a.Ack(tag); err != nil {
			t.Fatalf("ack(%d): %v", tag, err)
		}
	}
}

func wantFrames(t *testing.T, f *frames, want ...ackFrame) {
	t.Helper()
	if got := f.take(); !slices.Equal(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
}

func TestAckerCoalescesThePrefix(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 100)
	mustAck(t, a, 3, 1, 2, 4, 5)
	a.flush(false)
	wantFrames(t, f, ackFrame{5, true})
	// A nacked tag in the prefix is passed over, never acked.
	a.Settled(6)
	mustAck(t, a, 7)
	a.flush(false)
	wantFrames(t, f, ackFrame{7, true})
}

func TestAckerStragglers(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 100)
	mustAck(t, a, 2, 3) // 1 is still running
	a.flush(false)
	wantFrames(t, f) // below the threshold: they wait
	a.flush(true)    // the straggler delay passed
	wantFrames(t, f, ackFrame{2, false}, ackFrame{3, false})
	mustAck(t, a, 1)
	a.flush(false)
	// 1..3 are settled; the multiple ack's own tag is 1, the only one
	// outstanding, so 2 and 3 are not acked twice.
	wantFrames(t, f, ackFrame{1, true})
	mustAck(t, a, 4)
	a.flush(false)
	wantFrames(t, f, ackFrame{4, true})
}

func TestAckerThresholdSendsWithoutWaiting(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 4) // half the prefetch: 2
	mustAck(t, a, 2)
	a.flush(false)
	wantFrames(t, f)
	mustAck(t, a, 3)
	a.flush(false)
	wantFrames(t, f, ackFrame{2, false}, ackFrame{3, false})
}

func TestAckerRefusesSecondSettle(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 100)
	mustAck(t, a, 1, 3)
	for _, tag := range []uint64{1, 3} {
		if err := a.Ack(tag); !errors.Is(err, errAlreadySettled) {
			t.Errorf("second ack(%d) = %v, want errAlreadySettled", tag, err)
		}
	}
	a.flush(true)
	wantFrames(t, f, ackFrame{1, true}, ackFrame{3, false})
	for _, tag := range []uint64{1, 3} {
		if err := a.Ack(tag); !errors.Is(err, errAlreadySettled) {
			t.Errorf("ack(%d) after it was sent = %v, want errAlreadySettled", tag, err)
		}
	}
	a.flush(true)
	wantFrames(t, f)
}

// TestAckerMemoryIsBounded: however long one delivery stays unsettled,
// what the acker keeps does not grow with the deliveries after it.
func TestAckerMemoryIsBounded(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 10)
	for tag := uint64(2); tag <= 10001; tag++ {
		mustAck(t, a, tag)
		if tag%5 == 0 {
			a.flush(false)
		}
	}
	a.flush(true)
	if len(a.unsent) != 0 || len(a.ranges) != 1 || a.low != 1 {
		t.Fatalf("after 10,000 acks behind tag 1: %d waiting, %d ranges, low %d; want 0, 1, 1", len(a.unsent), len(a.ranges), a.low)
	}
	f.take()
	mustAck(t, a, 1)
	a.flush(false)
	wantFrames(t, f, ackFrame{1, true})
	if a.low != 10002 || len(a.ranges) != 0 {
		t.Errorf("low %d with %d ranges, want 10002 and none", a.low, len(a.ranges))
	}
}

func TestAckerFailureIsReported(t *testing.T) {
	f := &frames{fail: errors.New("write: broken pipe")}
	a := makeAcker(f, 100)
	mustAck(t, a, 1)
	a.flush(false)
	if err := a.Ack(2); !errors.Is(err, amqp.ErrClosed) {
		t.Errorf("ack after a failed send = %v, want one wrapping amqp.ErrClosed", err)
	}
}

func TestAckerCloseSendsWaitingAcks(t *testing.T) {
	f := &frames{}
	a := New(f, 100)
	mustAck(t, a, 2, 3) // behind 1, which is never settled
	a.Close()
	wantFrames(t, f, ackFrame{2, false}, ackFrame{3, false})
	if err := a.Ack(4); !errors.Is(err, amqp.ErrClosed) {
		t.Errorf("ack after close = %v, want one wrapping amqp.ErrClosed", err)
	}
	a.Close() // twice is safe
}

func TestAckerFailsOnceTheChannelIsGone(t *testing.T) {
	a := New(&frames{}, 100)
	a.Gone(&amqp.Error{Code: amqp.ChannelError, Reason: "gone"})
	if err := a.Ack(1); !errors.Is(err, amqp.ErrClosed) {
		t.Errorf("ack after the channel closed = %v, want one wrapping amqp.ErrClosed", err)
	}
}

// TestAckerSendsAtTheThreshold: acks below half the prefetch wait for the
// gathering timer; the one reaching it sends them all at once, on the
// acking goroutine.
func TestAckerSendsAtTheThreshold(t *testing.T) {
	f := &frames{}
	a := makeAcker(f, 8) // threshold 4
	mustAck(t, a, 1, 2, 3)
	wantFrames(t, f)
	mustAck(t, a, 4)
	wantFrames(t, f, ackFrame{4, true})
}

// TestAckerHoldsNoGoroutine: an acker's timers start a goroutine only as
// they fire, so an idle subscription holds none for its acks.
func TestAckerHoldsNoGoroutine(t *testing.T) {
	before := goruntime.NumGoroutine()
	var as []*Acker
	for range 100 {
		as = append(as, New(&frames{}, 10))
	}
	if n := goruntime.NumGoroutine() - before; n >= 100 {
		t.Errorf("100 ackers hold %d goroutines, want none", n)
	}
	for _, a := range as {
		a.Close()
	}
}

// frameFeed hands each ack sent to a channel.
type frameFeed chan ackFrame

func (f frameFeed) Ack(tag uint64, multiple bool) error {
	f <- ackFrame{tag, multiple}
	return nil
}

// TestAckerGatheredAcksGoOut: acks below the threshold all go out when the
// gathering timer fires, in one multiple ack.
func TestAckerGatheredAcksGoOut(t *testing.T) {
	feed := make(frameFeed, 16)
	a := New(feed, 100) // threshold 50
	defer a.Close()
	mustAck(t, a, 1, 2, 3, 4, 5)
	var got []ackFrame
	timeout := time.After(wait)
	for len(got) == 0 || got[len(got)-1].tag < 5 {
		select {
		case fr := <-feed:
			got = append(got, fr)
		case <-timeout:
			t.Fatalf("sent %v within %v, want acks up to 5", got, wait)
		}
	}
	if got[len(got)-1] != (ackFrame{5, true}) {
		t.Fatalf("sent %v, want the last to be a multiple ack of 5", got)
	}
}
