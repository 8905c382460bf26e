package topology

import (
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/runtime"
)

// UnroutedLadder returns the ladder whose unrouted queue is name,
// "queuey.ladder.<type>.<g>ms.unrouted", on a broker of version v, and
// false when name is not one.
func UnroutedLadder(name string, v Version) (Ladder, bool) {
	rest, ok := strings.CutPrefix(name, names.LadderPrefix)
	if !ok {
		return Ladder{}, false
	}
	rest, ok = strings.CutSuffix(rest, ".unrouted")
	if !ok {
		return Ladder{}, false
	}
	typ, g, ok := strings.Cut(rest, ".")
	if !ok {
		return Ladder{}, false
	}
	t := runtime.QueueType(typ)
	if t != runtime.QueueClassic && t != runtime.QueueQuorum {
		return Ladder{}, false
	}
	ms, ok := strings.CutSuffix(g, "ms")
	if !ok {
		return Ladder{}, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != ms {
		return Ladder{}, false
	}
	l := NewLadder(t, time.Duration(n)*time.Millisecond, v)
	if l.Unrouted() != name {
		return Ladder{}, false
	}
	return l, true
}

// KeyDelay returns the delay a ladder wait's routing key carries: its N
// bit words read as granularities ("h", a set bit of a wait of high
// priority on a split ladder, as "1"). It is false when key does not
// start with N words "0", "1" or "h".
func (l Ladder) KeyDelay(key string) (time.Duration, bool) {
	if len(key) <= 2*l.Levels {
		return 0, false
	}
	var units int64
	for i := range l.Levels {
		bit, dot := key[2*i], key[2*i+1]
		if (bit != '0' && bit != '1' && bit != 'h') || dot != '.' {
			return 0, false
		}
		units <<= 1
		if bit != '0' {
			units |= 1
		}
	}
	return time.Duration(units) * l.Granularity, true
}
