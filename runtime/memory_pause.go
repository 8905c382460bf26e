package runtime

import (
	"context"
	"fmt"
	"slices"

	"github.com/queuey/queuey/internal/rules/errs"
)

var _ Pauser = (*MemoryBackend)(nil)

// memPauses is the paused state of a MemoryBackend's queues and who
// watches it.
type memPauses struct {
	paused   map[string]bool
	watchers map[string][]chan bool
}

func (b *MemoryBackend) setPaused(queue string, paused bool) error {
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return ErrClosed
	}
	if _, ok := b.queues[queue]; !ok && paused {
		return errs.Unknown(queue, "was not declared on this backend")
	}
	if b.pauses.paused == nil {
		b.pauses.paused = map[string]bool{}
	}
	if b.pauses.paused[queue] == paused {
		return nil
	}
	b.pauses.paused[queue] = paused
	for _, c := range b.pauses.watchers[queue] {
		sendLatest(c, paused)
	}
	return nil
}

// PauseQueue pauses queue for every worker of this backend.
func (b *MemoryBackend) PauseQueue(ctx context.Context, queue string) error {
	return b.setPaused(queue, true)
}

// ResumeQueue resumes queue.
func (b *MemoryBackend) ResumeQueue(ctx context.Context, queue string) error {
	return b.setPaused(queue, false)
}

// Paused reports whether queue is paused.
func (b *MemoryBackend) Paused(ctx context.Context, queue string) (bool, error) {
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return false, ErrClosed
	}
	return b.pauses.paused[queue], nil
}

// WatchPaused sends queue's paused state now and on each change.
func (b *MemoryBackend) WatchPaused(ctx context.Context, queue string) (<-chan bool, error) {
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return nil, fmt.Errorf("watch queue %q: %w", queue, ErrClosed)
	}
	c := make(chan bool, 1)
	c <- b.pauses.paused[queue]
	if b.pauses.watchers == nil {
		b.pauses.watchers = map[string][]chan bool{}
	}
	b.pauses.watchers[queue] = append(b.pauses.watchers[queue], c)
	go func() {
		<-ctx.Done()
		b.mu.Lock()
		defer b.unlock()
		b.pauses.watchers[queue] = slices.DeleteFunc(b.pauses.watchers[queue], func(o chan bool) bool { return o == c })
		close(c)
	}()
	return c, nil
}

// sendLatest puts v in c, a channel of capacity 1 with this one writer,
// replacing a value not yet read.
func sendLatest(c chan bool, v bool) {
	select {
	case <-c:
	default:
	}
	c <- v
}
