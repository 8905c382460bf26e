package rabbitmq

import (
	"sync"
	"time"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// holdDeclares remembers which hold queues this process has declared, and
// when the broker last renewed each, so that a publish to a hold queue is
// made in the way that finds it.
//
// A classic hold queue expires (x-expires, topology.HoldExpires) once
// unused for that long, with whatever it holds; a publish to it does not
// renew that expiry, a declare does. So every publish to one is followed,
// on the same channel, by a passive declare of it
// (pubChannel.publishRenewing): the broker handles the two in that order,
// and the expiry the declare renews runs from just after the message
// entered the queue, while the message leaves it one TTL after it entered,
// a TTL or a second before the expiry comes, however late the publish
// reached the broker. A hold queue that was gone when the publish came
// returns it (mandatory); one that expired between the publish and the
// declare fails the declare; either way the message is not waiting there,
// and the wait publishes it again, after a declare that makes the queue
// exist. That declare goes on the same channel right before the publish
// when this process has declared the queue before but has not renewed it
// for half its expiry (it may have expired); the first declare of a hold
// queue in a process goes on a channel of its own (declarer), so that a
// refusal closes no channel that carries waits.
//
// A hold queue without x-expires (a quorum one) never expires: it is
// declared once per process, then published to without a declare. The
// cache is this process's view, so a publish that comes back unroutable
// (the queue was deleted meanwhile) declares it and publishes again.
type holdDeclares struct {
	mu      sync.Mutex
	used    map[string]holdUse
	sweepAt int // size of used at which stale entries are swept
}

// holdUse is what is known of one hold queue.
type holdUse struct {
	at     time.Time     // the last declare or publish that the broker took
	expiry time.Duration // x-expires; zero for none
}

// minSweep is the smallest size of holdDeclares.used that is swept.
const minSweep = 64

// expiryOf returns q's x-expires, zero when it has none.
func expiryOf(q topology.Queue) time.Duration {
	switch v := q.Args[topology.ArgExpires].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case int32:
		return time.Duration(v) * time.Millisecond
	case int:
		return time.Duration(v) * time.Millisecond
	}
	return 0
}

// state says whether this process has declared q, and whether the
// broker renewed q's expiry, as of now, recently enough that q most likely
// exists (always, for a q without one).
func (l *holdDeclares) state(q topology.Queue, now time.Time) (declared, fresh bool) {
	l.mu.Lock()
	e, ok := l.used[q.Name]
	l.mu.Unlock()
	return ok, ok && (e.expiry == 0 || now.Sub(e.at) < e.expiry/2)
}

// took records that the broker took a declare of q, or a publish to it,
// sent at at.
func (l *holdDeclares) took(q topology.Queue, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used == nil {
		l.used = make(map[string]holdUse)
	}
	if prev, ok := l.used[q.Name]; !ok || at.After(prev.at) {
		l.used[q.Name] = holdUse{at: at, expiry: expiryOf(q)}
	}
	if len(l.used) < max(l.sweepAt, minSweep) {
		return
	}
	// Forget hold queues whose expiry has passed: they are declared again on
	// their next use anyway. Those without an expiry stay; their number is
	// bounded (quorum hold queues).
	for name, e := range l.used {
		if e.expiry > 0 && at.Sub(e.at) >= e.expiry {
			delete(l.used, name)
		}
	}
	l.sweepAt = 2 * len(l.used)
}

// stale marks q as not renewed lately: the next publish to it declares
// it first, on its own channel.
func (l *holdDeclares) stale(q topology.Queue) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.used[q.Name]; ok {
		l.used[q.Name] = holdUse{expiry: e.expiry}
	}
}

// forget drops what is known of q: the next publish to it declares it
// first, on a channel of its own.
func (l *holdDeclares) forget(q topology.Queue) {
	l.mu.Lock()
	delete(l.used, q.Name)
	l.mu.Unlock()
}
