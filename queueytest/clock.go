package queueytest

import (
	"time"

	"github.com/queuey/queuey/internal/clock"
)

// Clock is the time of a Backend: the waits of its jobs (retries,
// deferrals, delayed enqueues) end, and the schedules of the workers over
// it tick, when it reaches their time, and it moves only when told. It
// starts at the real time New was called, to the second. It is safe for
// concurrent use.
type Clock struct {
	fake *clock.Fake
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.fake.Now() }

// Advance moves the clock d forward. Before it returns, every wait that
// has ended puts its job back on its queue, and every schedule whose tick
// has come is woken to enqueue it; RunReady then runs what that made
// ready. A wait ends at its time exactly: a job deferred for ten minutes
// is back once the clock has moved ten minutes, and not before.
func (c *Clock) Advance(d time.Duration) { c.fake.Advance(d) }
