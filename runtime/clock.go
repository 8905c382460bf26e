package runtime

import (
	"fmt"
	"time"

	"github.com/queuey/queuey/internal/testclock"
)

// realClock is the clock of the process: the one every backend and
// worker follows unless a test sets another (testclock.SetMemory).
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) testclock.Timer {
	return time.AfterFunc(d, f)
}

// clocked is a backend whose waits follow a clock of its own, which the
// schedules of a worker over it follow too.
type clocked interface {
	clock() testclock.Clock
}

// clockOf returns the clock b follows: the real one unless b is clocked.
func clockOf(b Backend) testclock.Clock {
	if c, ok := b.(clocked); ok {
		return c.clock()
	}
	return realClock{}
}

func (b *MemoryBackend) clock() testclock.Clock { return b.clk }

func init() {
	testclock.SetMemory = func(b any, c testclock.Clock) error {
		mb, ok := b.(*MemoryBackend)
		if !ok {
			return fmt.Errorf("testclock: %T is not a *runtime.MemoryBackend", b)
		}
		mb.mu.Lock()
		defer mb.mu.Unlock()
		if len(mb.timers) > 0 {
			return fmt.Errorf("testclock: the backend already holds %d waits on its clock", len(mb.timers))
		}
		mb.clk = c
		return nil
	}
	testclock.Schedules = func(w any) (waiting, total int) {
		wk := w.(*Worker)
		wk.mu.Lock()
		total = len(wk.periodics)
		wk.mu.Unlock()
		return int(wk.idleSchedules.Load()), total
	}
}
