package rabbitmq

import (
	"context"
	"fmt"

	"github.com/queuey/queuey/internal/syncx"
	"github.com/queuey/queuey/runtime"
)

// lifetime is the backend's, from Dial to Close. Every component that
// must stop with the backend holds it; Backend.Close ends it.
type lifetime struct {
	closed chan struct{}
}

func newLifetime() lifetime { return lifetime{closed: make(chan struct{})} }

// end ends the lifetime; Backend.Close calls it once.
func (l lifetime) end() { close(l.closed) }

// done is closed once the backend is closed.
func (l lifetime) done() <-chan struct{} { return l.closed }

// over says whether the backend is closed.
func (l lifetime) over() bool { return syncx.Closed(l.closed) }

// refuse is runtime.ErrClosed, of op when op is not empty, once the
// backend is closed, and nil before: what every call refuses a closed
// backend with.
func (l lifetime) refuse(op string) error {
	switch {
	case !l.over():
		return nil
	case op == "":
		return runtime.ErrClosed
	default:
		return fmt.Errorf("%s: %w", op, runtime.ErrClosed)
	}
}

// until returns a context of parent that also ends when the backend
// closes.
func (l lifetime) until(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-l.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
