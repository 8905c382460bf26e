package rabbitmq

import (
	"sync"
	"time"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// holdLeases remembers when each hold queue was last declared, so that a
// wait declares its hold queue only when the lease that declare renewed is
// no longer fresh, instead of before every publish.
//
// A classic hold queue expires (x-expires, 2×TTL) once unused for its
// lease, with whatever it holds: publishing to it does not renew the
// lease, only a declare does. A message published at t leaves the queue at
// t+TTL, so it is safe while t+TTL falls inside the lease. Declares are
// recorded at the moment they were sent (the broker renews no earlier), and
// a lease counts as fresh for a quarter of it (half a TTL): a message
// published then leaves the queue at least half a TTL before the lease can
// end. A hold queue without x-expires (a quorum one) never expires, so one
// declare per process is enough.
//
// The cache is this process's view: a hold queue deleted by someone else
// meanwhile makes the next publish to it unroutable, and the wait then
// declares it and publishes again (queueDelayer.wait).
type holdLeases struct {
	mu       sync.Mutex
	declared map[string]leaseEntry
	sweepAt  int // size of declared at which stale entries are swept
}

// leaseEntry is the last declare of one hold queue.
type leaseEntry struct {
	at      time.Time     // when the declare was sent
	lease   time.Duration // x-expires
	expires bool          // false: no x-expires, the queue stays
}

// minSweep is the smallest size of holdLeases.declared that is swept.
const minSweep = 64

// fresh reports whether q was declared recently enough, as of now, that a
// publish to it needs no declare first.
func (l *holdLeases) fresh(q topology.Queue, now time.Time) bool {
	l.mu.Lock()
	e, ok := l.declared[q.Name]
	l.mu.Unlock()
	return ok && (!e.expires || now.Sub(e.at) < e.lease/4)
}

// renewed records that q was declared by a declare sent at at.
func (l *holdLeases) renewed(q topology.Queue, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.declared == nil {
		l.declared = make(map[string]leaseEntry)
	}
	if prev, ok := l.declared[q.Name]; !ok || at.After(prev.at) {
		lease, expires := leaseOf(q)
		l.declared[q.Name] = leaseEntry{at: at, lease: lease, expires: expires}
	}
	if len(l.declared) < max(l.sweepAt, minSweep) {
		return
	}
	// Forget hold queues whose lease is over: they are declared again on
	// their next use anyway. Those without a lease stay; their number is
	// bounded
	// (quorum hold queues).
	for name, e := range l.declared {
		if e.expires && at.Sub(e.at) >= e.lease {
			delete(l.declared, name)
		}
	}
	l.sweepAt = 2 * len(l.declared)
}

// forget drops what is known of q's lease, so that the next wait onto q
// declares it.
func (l *holdLeases) forget(q topology.Queue) {
	l.mu.Lock()
	delete(l.declared, q.Name)
	l.mu.Unlock()
}

// leaseOf returns q's x-expires lease, and false when q has none.
func leaseOf(q topology.Queue) (time.Duration, bool) {
	switch v := q.Args[topology.ArgExpires].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond, true
	case int32:
		return time.Duration(v) * time.Millisecond, true
	case int:
		return time.Duration(v) * time.Millisecond, true
	}
	return 0, false
}
