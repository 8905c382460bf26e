package runtime

import (
	"github.com/queuey/queuey/internal/clock"
)

// clocked is a backend whose waits follow a clock of its own, which the
// schedules of a worker over it follow too.
type clocked interface {
	clock() clock.Clock
}

// clockOf returns the clock b follows: the real one unless b is clocked.
func clockOf(b Backend) clock.Clock {
	if c, ok := b.(clocked); ok {
		return c.clock()
	}
	return clock.Real{}
}

func (b *MemoryBackend) clock() clock.Clock { return b.clk }
