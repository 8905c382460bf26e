package runtime

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/clock"
)

var (
	_ Limiter       = (*MemoryBackend)(nil)
	_ PermitStarter = (*memPermit)(nil)
)

// The memory backend holds global limits in process, for every worker
// over it: a Limit is a count of places, a Rate a count of starts each of
// which comes back Per after it was spent (on the backend's clock, so a
// test clock drives it), and a LimitKey one place per key value. Waiters
// are served in the order they came.

// memLimit is the state of one queue's limits.
type memLimit struct {
	cfg   QueueConfig // the last config a permit was asked with
	limit memSem
	rate  memSem
	keys  map[string]*memSem
}

// memSem is a count of places with the waiters for them, first come first
// served.
type memSem struct {
	n, held int
	waiters []*memWaiter
	refs    int // a key's: the permits that looked it up and have not let go
}

// memWaiter is one AcquirePermit waiting for a place: ch is closed once
// it holds one (granted) or the backend closed.
type memWaiter struct {
	ch      chan struct{}
	granted bool
}

// grantLocked gives free places to the waiters, in order.
func (s *memSem) grantLocked() {
	for len(s.waiters) > 0 && s.held < s.n {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.held++
		w.granted = true
		close(w.ch)
	}
}

// releaseLocked gives one place back.
func (s *memSem) releaseLocked() {
	s.held--
	s.grantLocked()
}

// AcquirePermit waits until a job of q with limit key key may start under
// q's Limit, Rate and LimitKey, as runtime.Limiter says.
func (b *MemoryBackend) AcquirePermit(ctx context.Context, q QueueConfig, key string) (Permit, error) {
	p := &memPermit{b: b}
	b.mu.Lock()
	l := b.limitLocked(q)
	b.mu.Unlock()
	if q.LimitKey != "" {
		b.mu.Lock()
		s := l.keys[key]
		if s == nil {
			s = &memSem{n: 1}
			l.keys[key] = s
		}
		s.refs++
		b.mu.Unlock()
		if err := b.acquire(ctx, q, s); err != nil {
			b.dropKey(l, key, s)
			return nil, err
		}
		p.key, p.keySem, p.lim = key, s, l
	}
	if q.Limit > 0 {
		if err := b.acquire(ctx, q, &l.limit); err != nil {
			p.Release()
			return nil, err
		}
		p.limit = &l.limit
	}
	if !q.Rate.IsZero() {
		if err := b.acquire(ctx, q, &l.rate); err != nil {
			p.Release()
			return nil, err
		}
		p.rate, p.per = &l.rate, q.Rate.Per
	}
	return p, nil
}

// Started spends the permit's start of the Rate, as its run begins: it
// comes back Per later.
func (p *memPermit) Started() {
	b := p.b
	b.mu.Lock()
	defer b.unlock()
	if p.rate == nil || p.spent || p.done {
		return
	}
	p.spent = true
	if b.closed {
		return
	}
	rate := p.rate
	// t is set before the function can run: it takes b.mu first.
	var t clock.Timer
	t = b.clk.AfterFunc(p.per, func() {
		b.mu.Lock()
		defer b.unlock()
		delete(b.limitTimers, t)
		rate.releaseLocked()
	})
	if b.limitTimers == nil {
		b.limitTimers = map[clock.Timer]struct{}{}
	}
	b.limitTimers[t] = struct{}{}
}

// limitLocked returns q's limit state, made on first use, with the counts
// q asks for now (the last config given wins, as a new N on RabbitMQ).
func (b *MemoryBackend) limitLocked(q QueueConfig) *memLimit {
	if b.limits == nil {
		b.limits = map[string]*memLimit{}
	}
	l := b.limits[q.Name]
	if l == nil {
		l = &memLimit{keys: map[string]*memSem{}}
		b.limits[q.Name] = l
	}
	l.cfg = q
	l.limit.n = q.Limit
	l.rate.n = q.Rate.N
	l.limit.grantLocked()
	l.rate.grantLocked()
	return l
}

// acquire waits for a place of s.
func (b *MemoryBackend) acquire(ctx context.Context, q QueueConfig, s *memSem) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("permit of queue %q: %w", q.Name, ErrClosed)
	}
	if s.held < s.n && len(s.waiters) == 0 {
		s.held++
		b.mu.Unlock()
		return nil
	}
	w := &memWaiter{ch: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ch:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.unlock()
	switch {
	case w.granted:
		if ctx.Err() == nil {
			return nil
		}
		s.releaseLocked() // granted as ctx ended: give it on
	case b.closed:
		return fmt.Errorf("permit of queue %q: %w", q.Name, ErrClosed)
	default:
		for i, o := range s.waiters {
			if o == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				break
			}
		}
	}
	return ctx.Err()
}

// dropKey lets go of key's state, forgetting it when no permit refers
// to it.
func (b *MemoryBackend) dropKey(l *memLimit, key string, s *memSem) {
	b.mu.Lock()
	defer b.unlock()
	s.refs--
	if s.refs == 0 && l.keys[key] == s {
		delete(l.keys, key)
	}
}

// closeLimitsLocked wakes every waiter for a permit, to fail with
// ErrClosed, and stops the rate's pending returns.
func (b *MemoryBackend) closeLimitsLocked() {
	for t := range b.limitTimers {
		t.Stop()
	}
	clear(b.limitTimers)
	wake := func(s *memSem) {
		for _, w := range s.waiters {
			close(w.ch)
		}
		s.waiters = nil
	}
	for _, l := range b.limits {
		wake(&l.limit)
		wake(&l.rate)
		for _, s := range l.keys {
			wake(s)
		}
	}
}

// memPermit is what the memory backend's AcquirePermit grants.
type memPermit struct {
	b      *MemoryBackend
	lim    *memLimit
	key    string
	keySem *memSem
	limit  *memSem
	rate   *memSem       // the Rate's start, held until Started spends it
	per    time.Duration // the Rate's period
	spent  bool          // Started spent the start
	done   bool
}

// Release gives back the permit's place under the Limit and its key.
func (p *memPermit) Release() {
	p.b.mu.Lock()
	if p.done {
		p.b.unlock()
		return
	}
	p.done = true
	if p.limit != nil {
		p.limit.releaseLocked()
	}
	if p.rate != nil && !p.spent {
		p.rate.releaseLocked() // the run never began: the start goes back
	}
	if p.keySem != nil {
		p.keySem.releaseLocked()
	}
	p.b.unlock()
	if p.keySem != nil {
		p.b.dropKey(p.lim, p.key, p.keySem)
	}
}

// LimitStates returns the state of the global limits of each of queues
// that has some, in the order given; with no queues, of every queue a
// permit was asked for, sorted by name (admin.LimitReader).
func (b *MemoryBackend) LimitStates(ctx context.Context, queues []QueueConfig) ([]LimitState, error) {
	b.mu.Lock()
	defer b.unlock()
	if len(queues) == 0 {
		for _, l := range b.limits {
			queues = append(queues, l.cfg)
		}
		slices.SortFunc(queues, func(a, b QueueConfig) int { return strings.Compare(a.Name, b.Name) })
	}
	var out []LimitState
	for _, q := range queues {
		if !q.Limited() {
			continue
		}
		st := LimitState{Queue: q.Name, Limit: q.Limit, Rate: q.Rate}
		if l := b.limits[q.Name]; l != nil {
			st.InUse, st.Waiting = l.limit.held, len(l.limit.waiters)
			st.RateReady, st.RateWaiting = max(l.rate.n-l.rate.held, 0), len(l.rate.waiters)
			for _, s := range l.keys {
				if s.held > 0 {
					st.KeysHeld++
				}
				st.KeysWaiting += len(s.waiters)
			}
		} else if !q.Rate.IsZero() {
			st.RateReady = q.Rate.N
		}
		out = append(out, st)
	}
	return out, nil
}
