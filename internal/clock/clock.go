// Package clock is the clock that the waits of a runtime.MemoryBackend and
// the schedules of the workers over it follow: the real one, or a fake one
// that moves only when told, on which package queueytest drives retries,
// deferrals, delayed enqueues and schedule ticks in no real time.
package clock

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Clock tells the time and calls functions after a while.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call of Clock.AfterFunc.
type Timer interface {
	// Stop keeps the call from happening, and reports whether it did.
	Stop() bool
}

// Real is the clock of the process.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a Clock that stands still until Advance or Set moves it. It is
// safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64
	pending []*fakeTimer
}

// NewFake returns a Fake showing start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start}
}

type fakeTimer struct {
	c   *Fake
	due time.Time
	seq uint64
	f   func()
}

// Now returns the clock's time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f once the clock has been moved d or more past now; a d
// of zero or less is due at once, and called soon from a goroutine of its
// own.
func (c *Fake) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	c.seq++
	t := &fakeTimer{c: c, due: c.now.Add(d), seq: c.seq, f: f}
	c.pending = append(c.pending, t)
	c.mu.Unlock()
	if d <= 0 {
		go c.Advance(0)
	}
	return t
}

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	n := len(t.c.pending)
	t.c.pending = slices.DeleteFunc(t.c.pending, func(p *fakeTimer) bool { return p == t })
	return len(t.c.pending) < n
}

// Advance moves the clock d forward and calls every function whose time
// has come, one after another in the order of their times, before it
// returns. The functions must not block: those of the memory backend put
// a job back on its queue, those of a schedule wake it.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	c.setLocked(c.now.Add(d))
}

// Set moves the clock to t, as Advance does; a t before now calls what
// is due at now.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	c.setLocked(t)
}

// setLocked moves the clock to end, firing what falls due; it unlocks.
func (c *Fake) setLocked(end time.Time) {
	if end.Before(c.now) {
		end = c.now
	}
	var due []*fakeTimer
	c.pending = slices.DeleteFunc(c.pending, func(t *fakeTimer) bool {
		if t.due.After(end) {
			return false
		}
		due = append(due, t)
		return true
	})
	slices.SortFunc(due, func(a, b *fakeTimer) int {
		if n := a.due.Compare(b.due); n != 0 {
			return n
		}
		return cmp.Compare(a.seq, b.seq)
	})
	c.now = end
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// Pending returns how many calls wait for their time.
func (c *Fake) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}
