package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/queuey/queuey/internal/syncx"
)

// HandlerFunc runs one job. Generated HandleX functions wrap a typed handler
// into one.
type HandlerFunc func(ctx context.Context, env *Envelope) error

// Middleware wraps a HandlerFunc: for logging, tracing, metrics, recovery.
// Worker.Use puts it around every handler run of a worker.
type Middleware func(next HandlerFunc) HandlerFunc

// DefaultShutdownTimeout is how long Run waits for in-flight handlers once
// its context ends, unless WithShutdownTimeout says otherwise.
const DefaultShutdownTimeout = 30 * time.Second

// maxReasonLen bounds the error text carried with a job, since broker
// headers live in one frame.
const maxReasonLen = 4096

// WorkerOption configures a Worker.
type WorkerOption func(*Worker)

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

// WithProducer makes the jobs the worker's schedules enqueue (Periodic,
// or a QueueConfig with a Schedule) go through p, and so through p's
// middleware (Producer.Use): give the worker the producer the application
// enqueues through, instrumented (otelqueuey's ProducerMiddleware, say),
// so that scheduled jobs are traced and carry the same headers. p must
// publish where the worker's backend consumes: over the same backend, or
// one of the same broker. Without WithProducer, or with a nil p, the
// worker enqueues through a producer of its own over its backend, which
// declares nothing and has no middleware.
func WithProducer(p *Producer) WorkerOption {
	return func(w *Worker) {
		if p != nil {
			w.producer = p
		}
	}
}

// Worker consumes registered queues and runs their handlers.
//
// A worker logs through its backend's logger (Backend.Logger: given to
// NewMemoryBackend with MemoryLogger, or as rabbitmq.Options.Logger).
// Records about one run of a job (its retry, dead letter, deferral, a
// panic, a failed settle) are logged with the run's context, as the
// worker's observers made it, so that a handler can read what it carries:
// otelqueuey.NewLogHandler adds the run's trace and span IDs.
type Worker struct {
	backend         Backend
	log             *slog.Logger
	shutdownTimeout time.Duration
	permitWait      time.Duration // DefaultPermitWait but in tests
	maxDeferrals    int           // 0: no cap
	observers       []Observer
	producer        *Producer // enqueues the ticks of schedules

	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	done     chan struct{} // closed when a started Run returns
	timedOut atomic.Bool   // a shutdown timeout passed with handlers running
	// idleSchedules counts the schedules waiting for their next tick,
	// for tests that run a worker until nothing is left to do
	// (Hooks).
	idleSchedules atomic.Int32
	parked        parkedQueues // queues with nothing to deliver, holding no goroutine

	mu         sync.Mutex
	middleware []Middleware // the first the outermost
	regs       []registration
	periodics  []*periodic
	regErrs    []error
	started    bool
}

type registration struct {
	queue   QueueConfig
	handler HandlerFunc
	keyOf   func(payload []byte) (string, bool) // reads a job's limit key (Handle)
}

// NewWorker returns a Worker over b.
func NewWorker(b Backend, opts ...WorkerOption) *Worker {
	w := &Worker{
		backend:         b,
		log:             b.Logger(),
		shutdownTimeout: DefaultShutdownTimeout,
		permitWait:      DefaultPermitWait,
		maxDeferrals:    DefaultMaxDeferrals,
		stop:            make(chan struct{}),
		done:            make(chan struct{}),
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	for _, opt := range opts {
		opt(w)
	}
	if w.producer == nil {
		w.producer = NewProducerUndeclared(b)
	}
	return w
}

// Use adds middleware around every handler run of w. The first given is
// the outermost; a later Use wraps around earlier ones, as Producer.Use
// does. Using middleware after Run has started is a programming error
// and panics, as registering does, since no run could take it.
func (w *Worker) Use(mw ...Middleware) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("queuey: Worker.Use called after Worker.Run started; add every middleware before Run")
	}
	w.middleware = append(slices.Clone(mw), w.middleware...)
}

// register makes h the handler of q's jobs (Handle). A bad config or a
// queue registered twice (naming both job types when their kinds differ)
// is reported by Run. Each job is checked against q before h runs.
// Registering after Run has started panics, as nothing could report it.
// keyOf, when q has a LimitKey, reads a job's key from its payload.
func (w *Worker) register(q QueueConfig, h HandlerFunc, keyOf func([]byte) (string, bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.started:
		panic(fmt.Sprintf("queuey: handler for queue %q registered after Worker.Run started; register every handler before Run", q.Name))
	case h == nil:
		w.regErrs = append(w.regErrs, fmt.Errorf("%w: queue %q: nil handler", ErrInvalidOption, q.Name))
		return
	}
	if i := slices.IndexFunc(w.regs, func(r registration) bool { return r.queue.Name == q.Name }); i >= 0 {
		err := fmt.Errorf("%w: queue %q registered twice", ErrInvalidOption, q.Name)
		if conflict := kindConflict(w.regs[i].queue, q); conflict != nil {
			err = fmt.Errorf("%w: queue %q registered twice: %w", ErrInvalidOption, q.Name, conflict)
		}
		w.regErrs = append(w.regErrs, err)
		return
	}
	if err := q.Validate(); err != nil {
		w.regErrs = append(w.regErrs, err)
		return
	}
	q = q.WithDefaults()
	w.regs = append(w.regs, registration{queue: q, handler: w.checkJob(q, h), keyOf: keyOf})
}

// refuse records err, a registration that cannot be made, for Run to
// report.
func (w *Worker) refuse(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.regErrs = append(w.regErrs, err)
}

// Queues returns the configs of the queues registered on w, with their
// defaults applied, in registration order.
func (w *Worker) Queues() []QueueConfig {
	w.mu.Lock()
	defer w.mu.Unlock()
	qs := make([]QueueConfig, len(w.regs))
	for i, r := range w.regs {
		qs[i] = r.queue
	}
	return qs
}

// Run declares every registered queue (and each queue a schedule enqueues
// onto), consumes each with its prefetch and concurrency, runs handlers
// and contends for each schedule's lease (see Periodic) until ctx ends or
// Stop is called. A queue paused through the backend (see Pauser) is
// not consumed until it is resumed. Then it
// stops consuming and waits for in-flight handlers up to the shutdown
// timeout. Jobs whose handlers had not finished by then are left unsettled,
// so the backend delivers them again; their handlers' contexts are cancelled
// with ErrShutdownTimeout as the cause, and a handler that ignores that may
// outlive Run.
//
// Run returns nil after a clean shutdown, whether ctx ended or Stop was
// called. When the shutdown timeout passed with handlers still running, it
// returns an error wrapping ErrShutdownTimeout: their jobs were abandoned,
// to be delivered again. It returns at once with an error for bad
// registrations (ErrInvalidOption), no registrations at all
// (ErrNoHandlers), a failed declare, or a backend that was closed under
// it. It returns an error wrapping ErrCannotConsume, naming the queue, when
// a queue cannot be consumed (the broker refused it), after stopping the
// others as on shutdown.
//
// Run may be called once. A second call returns ErrWorkerRunning while the
// first runs, and ErrWorkerDone once it has returned: a worker is not run
// again, since Stop, once called, stops it for good, and a Stop meant for
// one run must not be taken by the next. Make a new Worker to run again.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		select {
		case <-w.done:
			return ErrWorkerDone
		default:
			return ErrWorkerRunning
		}
	}
	w.started = true
	regs := slices.Clone(w.regs)
	middleware := w.middleware
	periodics := slices.Clone(w.periodics)
	regErr := errors.Join(w.regErrs...)
	w.mu.Unlock()
	defer close(w.done)

	if regErr != nil {
		return regErr
	}
	if len(regs) == 0 && len(periodics) == 0 {
		return fmt.Errorf("%w: register a handler (a generated HandleX) or a schedule (Periodic) before Run", ErrNoHandlers)
	}
	leaser, err := w.leaser(periodics)
	if err != nil {
		return err
	}
	limiters := map[string]Limiter{}
	for _, r := range regs {
		l, err := w.limiterFor(r.queue)
		if err != nil {
			return err
		}
		if l == nil {
			continue
		}
		if r.queue.LimitKey != "" && r.keyOf == nil {
			return fmt.Errorf("%w: queue %q: LimitKey %q needs the job's type to read the key: register its handler with Handle (a generated HandleX)", ErrInvalidOption, r.queue.Name, r.queue.LimitKey)
		}
		limiters[r.queue.Name] = l
	}
	select {
	case <-w.stop:
		return nil
	default:
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-runCtx.Done():
		}
	}()
	halt, endHalt := afterShutdown(runCtx, w.shutdownTimeout, fmt.Errorf("%w (%v)", ErrShutdownTimeout, w.shutdownTimeout))
	defer endHalt()
	queues := make([]QueueConfig, 0, len(regs)+len(periodics))
	for _, r := range regs {
		queues = append(queues, r.queue)
	}
	for _, p := range periodics {
		queues = append(queues, p.queue)
	}
	if err := w.declareAll(runCtx, queues); err != nil {
		if runCtx.Err() != nil {
			return nil // stopped while declaring: a clean shutdown
		}
		return err
	}
	var (
		wg      sync.WaitGroup
		errMu   sync.Mutex
		runErrs []error
	)
	fail := func(err error) {
		errMu.Lock()
		runErrs = append(runErrs, err)
		errMu.Unlock()
		cancel() // the backend is gone: stop every queue
	}
	for _, r := range regs {
		c := &queueRunner{w: w, queue: r.queue, handler: wrap(r.handler, middleware), halt: halt, limiter: limiters[r.queue.Name], keyOf: r.keyOf}
		wg.Add(1)
		c.start(runCtx, func(err error) {
			if err != nil {
				fail(err)
			}
			wg.Done()
		})
	}
	for _, p := range periodics {
		wg.Go(func() {
			if err := p.run(runCtx, leaser); err != nil {
				fail(err)
			}
		})
	}
	wg.Wait()
	w.parked.wait()
	if w.timedOut.Load() {
		runErrs = append(runErrs, fmt.Errorf("%w (%v): unfinished jobs were left to be delivered again", ErrShutdownTimeout, w.shutdownTimeout))
	}
	return errors.Join(runErrs...)
}

// Stop ends Run as if its context had ended and waits until Run has
// returned or ctx ends. Stop before Run makes Run return nil at once. Stop is
// safe to call more than once.
func (w *Worker) Stop(ctx context.Context) error {
	w.stopOnce.Do(func() { close(w.stop) })
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// afterShutdown returns a context that ends, with cause, once timeout has
// passed since ctx ended, and a function that ends it at once.
func afterShutdown(ctx context.Context, timeout time.Duration, cause error) (context.Context, func()) {
	halt, end := context.WithCancelCause(context.WithoutCancel(ctx))
	var (
		mu    sync.Mutex
		timer *time.Timer
		over  bool
	)
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			timer = time.AfterFunc(timeout, func() { end(cause) })
		}
	})
	return halt, func() {
		stop()
		mu.Lock()
		over = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		end(nil)
	}
}

// wrap returns h inside middleware, the first the outermost.
func wrap(h HandlerFunc, middleware []Middleware) HandlerFunc {
	for _, mw := range slices.Backward(middleware) {
		h = mw(h)
	}
	return h
}

// truncate makes a handler's error text fit a job: valid UTF-8 (the wire
// format refuses any other string, so a job carrying one would come back
// as poison) and at most maxReasonLen bytes, cut on a character's
// boundary.
func truncate(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxReasonLen {
		return s
	}
	cut := maxReasonLen - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// mismatchRetries are the waits before each new declare of a worker whose
// queue exists on the broker with other arguments (ErrQueueMismatch):
// about two minutes in all, so that a worker run again by a supervisor
// after each failure does not crash-loop tightly, and one started just
// before the queue is migrated (queuey queues migrate) finds it migrated.
var mismatchRetries = []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 45 * time.Second}

// declareAll declares queues, and again after each of mismatchRetries
// while a queue exists with other arguments, logging the refusal each
// time; then it returns that refusal.
func (w *Worker) declareAll(ctx context.Context, queues []QueueConfig) error {
	err := declareAll(ctx, w.backend, queues)
	for _, d := range mismatchRetries {
		if !errors.Is(err, ErrQueueMismatch) {
			return err
		}
		w.log.Error("queuey: a queue exists on the broker with other arguments than its config; declaring it again later", "retry_in", d, "err", err)
		if !syncx.Sleep(ctx, d) {
			return ctx.Err()
		}
		err = declareAll(ctx, w.backend, queues)
	}
	return err
}
