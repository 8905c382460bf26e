package syncx

import "sync"

// Notes holds the listener of events of type T, or the events recorded
// while there is none: those recorded before it comes are kept, up to a
// bound, and handed to it first, in order, each once. Once told that no
// listener will come, it keeps none. The zero value is ready to use.
type Notes[T any] struct {
	mu      sync.Mutex
	fn      func(T)
	pending []T
	unheard bool // no listener will come: keep nothing
}

// Tell hands e to the listener, or keeps it for the next one when there is
// none (dropping it when max are kept already, or when no listener will
// come).
func (n *Notes[T]) Tell(e T, max int) {
	n.mu.Lock()
	fn := n.fn
	if fn == nil && !n.unheard && len(n.pending) < max {
		n.pending = append(n.pending, e)
	}
	n.mu.Unlock()
	if fn != nil {
		fn(e)
	}
}

// Listen makes fn the listener, after handing it the events kept so far.
// nil says that no listener will come: the events kept are dropped, and
// later ones are not kept, until a Listen with a listener.
func (n *Notes[T]) Listen(fn func(T)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.pending {
		if fn != nil {
			fn(e)
		}
	}
	n.pending = nil
	n.fn = fn
	n.unheard = fn == nil
}
