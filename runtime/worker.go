package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// HandlerFunc runs one job. Generated HandleX functions wrap a typed handler
// into one.
type HandlerFunc func(ctx context.Context, env *Envelope) error

// Middleware wraps a HandlerFunc: for logging, tracing, metrics, recovery.
type Middleware func(next HandlerFunc) HandlerFunc

// DefaultShutdownTimeout is how long Run waits for in-flight handlers once
// its context ends, unless WithShutdownTimeout says otherwise.
const DefaultShutdownTimeout = 30 * time.Second

// maxReasonLen bounds the error text carried with a job, since broker
// headers live in one frame.
const maxReasonLen = 4096

// WorkerOption configures a Worker.
type WorkerOption func(*Worker)

// WithLogger sets the worker's logger. The default is slog.Default().
func WithLogger(l *slog.Logger) WorkerOption {
	return func(w *Worker) {
		if l != nil {
			w.log = l
		}
	}
}

// WithShutdownTimeout sets how long Run waits for in-flight handlers after
// its context ends before it cancels them and returns; their jobs are left
// unsettled, to be delivered again. Zero or less means
// DefaultShutdownTimeout.
func WithShutdownTimeout(d time.Duration) WorkerOption {
	return func(w *Worker) {
		if d > 0 {
			w.shutdownTimeout = d
		}
	}
}

// WithMiddleware adds middleware around every handler. The first given is
// the outermost.
func WithMiddleware(mw ...Middleware) WorkerOption {
	return func(w *Worker) { w.middleware = append(w.middleware, mw...) }
}

// Worker consumes registered queues and runs their handlers.
type Worker struct {
	backend         Backend
	log             *slog.Logger
	shutdownTimeout time.Duration
	middleware      []Middleware

	mu       sync.Mutex
	regs     []registration
	regErrs  []error
	started  bool
	stopping context.CancelFunc
	done     chan struct{}
}

type registration struct {
	queue   QueueConfig
	handler HandlerFunc
}

// NewWorker returns a Worker over b.
func NewWorker(b Backend, opts ...WorkerOption) *Worker {
	w := &Worker{backend: b, log: slog.Default(), shutdownTimeout: DefaultShutdownTimeout}
	for _, opt := range opts {
		opt(w)
	}
	return w
}

// Register makes h the handler of q's jobs. Generated HandleX functions call
// it. A bad config, a queue registered twice or a registration after Run has
// started is reported by Run.
func (w *Worker) Register(q QueueConfig, h HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.started:
		w.regErrs = append(w.regErrs, fmt.Errorf("%w: queue %q registered after Run started", ErrInvalidOption, q.Name))
		return
	case h == nil:
		w.regErrs = append(w.regErrs, fmt.Errorf("%w: queue %q: nil handler", ErrInvalidOption, q.Name))
		return
	case slices.ContainsFunc(w.regs, func(r registration) bool { return r.queue.Name == q.Name }):
		w.regErrs = append(w.regErrs, fmt.Errorf("%w: queue %q registered twice", ErrInvalidOption, q.Name))
		return
	}
	if err := q.Validate(); err != nil {
		w.regErrs = append(w.regErrs, err)
		return
	}
	w.regs = append(w.regs, registration{queue: q.WithDefaults(), handler: h})
}

// Run declares every registered queue, consumes each with its prefetch and
// concurrency, and runs handlers until ctx ends. Then it stops consuming,
// waits for in-flight handlers up to the shutdown timeout, and returns ctx's
// error; after Stop it returns nil. Jobs whose handlers had not finished are
// left unsettled, so the backend delivers them again. Run may be called
// once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return ErrWorkerRunning
	}
	w.started = true
	runCtx, cancel := context.WithCancel(ctx)
	w.stopping = cancel
	w.done = make(chan struct{})
	regs := slices.Clone(w.regs)
	regErr := errors.Join(w.regErrs...)
	w.mu.Unlock()
	defer close(w.done)
	defer cancel()

	if regErr != nil {
		return regErr
	}
	if len(regs) == 0 {
		return fmt.Errorf("%w: no handlers registered", ErrInvalidOption)
	}
	for _, r := range regs {
		if err := w.backend.Declare(runCtx, r.queue); err != nil {
			return fmt.Errorf("declare queue %q: %w", r.queue.Name, err)
		}
	}
	var wg sync.WaitGroup
	for _, r := range regs {
		c := &queueRunner{w: w, queue: r.queue, handler: w.wrap(r.handler)}
		wg.Go(func() { c.run(runCtx) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// Stop ends a running Run as if its context had ended and waits until it has
// returned or ctx ends. It is safe to call more than once, and before Run.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	cancel, done := w.stopping, w.done
	w.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *Worker) wrap(h HandlerFunc) HandlerFunc {
	for _, mw := range slices.Backward(w.middleware) {
		h = mw(h)
	}
	return h
}

func truncate(s string) string {
	if len(s) <= maxReasonLen {
		return s
	}
	return s[:maxReasonLen-3] + "..."
}
