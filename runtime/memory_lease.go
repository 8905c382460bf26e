package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

var _ Leaser = (*MemoryBackend)(nil)

// memLease is one lease of a MemoryBackend: its mark, its holder and the
// contenders waiting for it, first come first served.
type memLease struct {
	mark    time.Time
	holder  *memHeld
	waiters []chan *memHeld // nil is sent when the backend closes
}

// memHeld is a held lease of a MemoryBackend.
type memHeld struct {
	b    *MemoryBackend
	l    *memLease
	lost chan struct{}
	once sync.Once
}

// AcquireLease waits until the lease called name is free in this
// backend, or ctx ends, and takes it. Leases of a MemoryBackend are
// shared by the workers of one process.
func (b *MemoryBackend) AcquireLease(ctx context.Context, name string) (HeldLease, error) {
	b.mu.Lock()
	if b.closed {
		b.unlock()
		return nil, fmt.Errorf("lease %q: %w", name, ErrClosed)
	}
	if b.leases == nil {
		b.leases = map[string]*memLease{}
	}
	l, ok := b.leases[name]
	if !ok {
		l = &memLease{}
		b.leases[name] = l
	}
	if l.holder == nil {
		h := &memHeld{b: b, l: l, lost: make(chan struct{})}
		l.holder = h
		b.unlock()
		return h, nil
	}
	ch := make(chan *memHeld, 1)
	l.waiters = append(l.waiters, ch)
	b.unlock()
	select {
	case h := <-ch:
		if h == nil {
			return nil, fmt.Errorf("lease %q: %w", name, ErrClosed)
		}
		return h, nil
	case <-ctx.Done():
		b.mu.Lock()
		l.waiters = slices.DeleteFunc(l.waiters, func(c chan *memHeld) bool { return c == ch })
		b.unlock()
		select {
		case h := <-ch: // granted meanwhile: pass it on
			if h != nil {
				_ = h.Release()
			}
		default:
		}
		return nil, ctx.Err()
	}
}

func (h *memHeld) Mark() time.Time {
	h.b.mu.Lock()
	defer h.b.unlock()
	return h.l.mark
}

func (h *memHeld) Advance(ctx context.Context, mark time.Time) error {
	h.b.mu.Lock()
	defer h.b.unlock()
	if h.l.holder != h {
		return fmt.Errorf("lease: %w", ErrClosed)
	}
	h.l.mark = mark
	return nil
}

func (h *memHeld) Lost() <-chan struct{} { return h.lost }

// Release hands the lease to the longest-waiting contender.
func (h *memHeld) Release() error {
	h.b.mu.Lock()
	defer h.b.unlock()
	h.releaseLocked(true)
	return nil
}

func (h *memHeld) releaseLocked(handOn bool) {
	h.once.Do(func() { close(h.lost) })
	if h.l.holder != h {
		return
	}
	h.l.holder = nil
	if !handOn || len(h.l.waiters) == 0 {
		return
	}
	next := &memHeld{b: h.b, l: h.l, lost: make(chan struct{})}
	h.l.holder = next
	ch := h.l.waiters[0]
	h.l.waiters = h.l.waiters[1:]
	ch <- next
}

// closeLeasesLocked ends every lease: holders lose theirs, contenders
// get ErrClosed.
func (b *MemoryBackend) closeLeasesLocked() {
	for _, l := range b.leases {
		if l.holder != nil {
			l.holder.releaseLocked(false)
		}
		for _, ch := range l.waiters {
			ch <- nil
		}
		l.waiters = nil
	}
}
