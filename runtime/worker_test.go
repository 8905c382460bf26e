package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type ping struct{ N int }

// quietMemory returns a memory backend whose logs, and those of workers
// over it, go nowhere: tests provoke failures on purpose.
func quietMemory() *runtime.MemoryBackend {
	return runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
}

// ready returns how many jobs wait ready on queue.
func ready(t *testing.T, b admin.ReadyCounter, queue string) int {
	t.Helper()
	n, err := b.Ready(context.Background(), queue)
	if err != nil {
		t.Fatalf("Ready(%q): %v", queue, err)
	}
	return n
}

func recvT[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

func TestWorkerRunTwiceAndStopTwice(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ping", Kind: runtime.KindOf[ping]()}
	w := runtime.NewWorker(b)
	ran := make(chan int, 1)
	runtime.Handle(w, q, func(ctx context.Context, p ping) error { ran <- p.N; return nil })
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 7}); err != nil {
		t.Fatal(err)
	}
	if n := recvT(t, ran); n != 7 {
		t.Fatalf("handled %d, want 7", n)
	}
	if err := w.Run(context.Background()); !errors.Is(err, runtime.ErrWorkerRunning) {
		t.Errorf("second Run = %v, want ErrWorkerRunning", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := recvT(t, errc); err != nil {
		t.Errorf("Run after Stop = %v, want nil", err)
	}
	err = w.Run(context.Background())
	if !errors.Is(err, runtime.ErrWorkerDone) || strings.Contains(err.Error(), "running") {
		t.Errorf("Run after Run returned = %v, want ErrWorkerDone, which does not say it is running", err)
	}
}

func TestWorkerStopBeforeOrRightAfterRun(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ping", Kind: runtime.KindOf[ping]()}
	h := func(ctx context.Context, p ping) error { return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Stop before Run: Run returns nil at once.
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, h)
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop before Run: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	if err := recvT(t, errc); err != nil {
		t.Errorf("Run after Stop = %v, want nil", err)
	}

	// Stop racing a Run that has just been started: Run still ends.
	for range 50 {
		w := runtime.NewWorker(b)
		runtime.Handle(w, q, h)
		errc := make(chan error, 1)
		go func() { errc <- w.Run(context.Background()) }()
		if err := w.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if err := recvT(t, errc); err != nil {
			t.Fatalf("Run = %v, want nil after Stop", err)
		}
	}
}

// runningWorker starts a worker on queue name and returns once it has
// handled a first job, so that Run is known to be consuming.
func runningWorker(t *testing.T, b *runtime.MemoryBackend, name string) (*runtime.Worker, <-chan error) {
	t.Helper()
	q := runtime.QueueConfig{Name: name, Kind: runtime.KindOf[ping]()}
	w := runtime.NewWorker(b)
	ran := make(chan struct{}, 1)
	runtime.Handle(w, q, func(ctx context.Context, p ping) error { ran <- struct{}{}; return nil })
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{}); err != nil {
		t.Fatal(err)
	}
	recvT(t, ran)
	return w, errc
}

func TestWorkerRegisterAfterRunPanics(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	w, errc := runningWorker(t, b, "first")
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), `queue "late" registered after Worker.Run started`) {
			t.Errorf("recovered %v, want a panic naming the queue", r)
		}
		_ = w.Stop(context.Background())
		recvT(t, errc)
	}()
	runtime.Handle(w, runtime.QueueConfig{Name: "late"}, func(ctx context.Context, p ping) error { return nil })
}

func TestWorkerUseAfterRunPanics(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	w, errc := runningWorker(t, b, "first")
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "Worker.Use called after Worker.Run started") {
			t.Errorf("recovered %v, want a panic saying Use came after Run", r)
		}
		_ = w.Stop(context.Background())
		recvT(t, errc)
	}()
	w.Use(func(next runtime.HandlerFunc) runtime.HandlerFunc { return next })
}

func TestWorkerReturnsWhenBackendCloses(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	_, errc := runningWorker(t, b, "closing")
	b.Close()
	if err := recvT(t, errc); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Run = %v, want ErrClosed once the backend closed", err)
	}
}

func TestWorkerRegistrationErrors(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	w := runtime.NewWorker(b)
	h := func(ctx context.Context, p ping) error { return nil }
	runtime.Handle(w, runtime.QueueConfig{Name: "a"}, h)
	runtime.Handle(w, runtime.QueueConfig{Name: "a"}, h)
	runtime.Handle(w, runtime.QueueConfig{Name: "b", Prefetch: 2, Concurrency: 3}, h)
	err := w.Run(context.Background())
	for _, want := range []string{`queue "a" registered twice`, `Concurrency = 3, want 1..Prefetch (2)`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v, want it to mention %q", err, want)
		}
	}
	err = runtime.NewWorker(b).Run(context.Background())
	if !errors.Is(err, runtime.ErrNoHandlers) || errors.Is(err, runtime.ErrInvalidOption) {
		t.Errorf("Run without handlers = %v, want ErrNoHandlers, not ErrInvalidOption", err)
	}
	if want := "queuey: no handlers registered: register a handler (a generated HandleX) or a schedule (Periodic) before Run"; err == nil || err.Error() != want {
		t.Errorf("Run without handlers = %v, want %q", err, want)
	}
}

func TestMiddlewareOrder(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "mw", Kind: runtime.KindOf[ping]()}
	var mu sync.Mutex
	var trail []string
	mark := func(s string) { mu.Lock(); trail = append(trail, s); mu.Unlock() }
	mw := func(name string) runtime.Middleware {
		return func(next runtime.HandlerFunc) runtime.HandlerFunc {
			return func(ctx context.Context, env *runtime.Envelope) error {
				mark(name + ">")
				err := next(ctx, env)
				mark("<" + name)
				return err
			}
		}
	}
	w := runtime.NewWorker(b)
	w.Use(mw("inner"), mw("innermost"))
	w.Use(mw("outer"), mw("middle")) // a later Use wraps around earlier ones
	done := make(chan struct{})
	runtime.Handle(w, q, func(ctx context.Context, p ping) error { mark("handler"); close(done); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	p, _ := runtime.NewProducer(ctx, b, q)
	if _, err := runtime.Enqueue(ctx, p, q, ping{}); err != nil {
		t.Fatal(err)
	}
	recvT(t, done)
	cancel()
	if err := recvT(t, errc); err != nil {
		t.Errorf("Run = %v, want nil after its context ended", err)
	}
	want := []string{"outer>", "middle>", "inner>", "innermost>", "handler", "<innermost", "<inner", "<middle", "<outer"}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(trail, want) {
		t.Errorf("trail %v, want %v", trail, want)
	}
}

func TestEnqueueOptionErrors(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "opts", Kind: runtime.KindOf[ping](), MaxPriority: 3}
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []runtime.EnqueueOption{runtime.WithPriority(4), runtime.WithPriority(-1), runtime.WithDelay(-time.Second), runtime.WithID("")} {
		if _, err := runtime.Enqueue(context.Background(), p, q, ping{}, opt); !errors.Is(err, runtime.ErrInvalidOption) {
			t.Errorf("Enqueue = %v, want ErrInvalidOption", err)
		}
	}
	if _, err := runtime.NewProducer(context.Background(), b, runtime.QueueConfig{Name: "opts", MaxPriority: 5}); !errors.Is(err, runtime.ErrQueueMismatch) {
		t.Errorf("redeclare with other max priority = %v, want ErrQueueMismatch", err)
	}
	if n := ready(t, b, "opts"); n != 0 {
		t.Errorf("refused enqueues left %d jobs", n)
	}
}

// TestBackendCloseRunsNoBufferedJob: when the backend closes under a
// worker, deliveries it had buffered can no longer be settled; their
// handlers must not run (the jobs would run twice), and Run ends.
func TestBackendCloseRunsNoBufferedJob(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	q := runtime.QueueConfig{Name: "buffered", Kind: runtime.KindOf[ping](), Prefetch: 5, Concurrency: 1}
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, func(ctx context.Context, j ping) error {
		if runs.Add(1) == 1 {
			close(started)
			<-release
		}
		return nil
	})
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	recvT(t, started)
	b.Close()
	close(release)
	if err := recvT(t, errc); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Run = %v, want ErrClosed", err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d handler runs, want 1: buffered deliveries of a closed backend ran", n)
	}
}

func TestWithEmptyIDIsRefused(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ids", Kind: runtime.KindOf[ping]()}
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runtime.Enqueue(context.Background(), p, q, ping{}, runtime.WithID(""))
	want := `queuey: invalid option: queue "ids": WithID(""): a job ID must not be empty; leave WithID out for a generated one`
	if err == nil || err.Error() != want {
		t.Errorf("Enqueue with WithID(\"\") = %v, want %q", err, want)
	}
	if _, err := runtime.EnqueueMany(context.Background(), p, q, []ping{{}}, runtime.WithID("")); !errors.Is(err, runtime.ErrInvalidOption) {
		t.Errorf("EnqueueMany with WithID(\"\") = %v, want ErrInvalidOption", err)
	}
	if n := ready(t, b, q.Name); n != 0 {
		t.Errorf("%d jobs enqueued, want none", n)
	}
}

// TestRunReturnsNilAfterStop: Stop is a clean shutdown, as the end of
// Run's context is.
func TestRunReturnsNilAfterStop(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	w := runtime.NewWorker(b)
	started := make(chan struct{})
	runtime.Handle(w, runtime.QueueConfig{Name: "stop", Kind: runtime.KindOf[ping]()}, func(ctx context.Context, p ping) error { return nil })
	errc := make(chan error, 1)
	go func() {
		close(started)
		errc <- w.Run(context.Background())
	}()
	recvT(t, started)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	if err := recvT(t, errc); err != nil {
		t.Errorf("Run = %v, want nil after Stop", err)
	}
}

// TestRegisterTwoKindsOnOneQueue: two job types registered on one queue
// name are refused, naming both types.
func TestRegisterTwoKindsOnOneQueue(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	w := runtime.NewWorker(b)
	w.Register(runtime.QueueConfig{Name: "notify", Kind: "sms.Send"}, func(context.Context, *runtime.Envelope) error { return nil })
	w.Register(runtime.QueueConfig{Name: "notify", Kind: "push.Send"}, func(context.Context, *runtime.Envelope) error { return nil })
	err := w.Run(context.Background())
	want := `queuey: invalid option: queue "notify" registered twice: queuey: two job kinds on one queue: queue "notify" is declared for sms.Send jobs and now for push.Send jobs`
	if !errors.Is(err, runtime.ErrKindConflict) || err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Run = %v, want ErrKindConflict starting %q", err, want)
	}
}

// TestHandleAndPeriodicRefuseAnotherJobType: a handler or a schedule whose
// job type is not the queue's kind is refused by Run with ErrJobType.
func TestHandleAndPeriodicRefuseAnotherJobType(t *testing.T) {
	t.Parallel()
	type refund struct{ Cents int }
	q := runtime.QueueConfig{Name: "basic", Kind: runtime.KindOf[ping]()}
	for name, register := range map[string]func(w *runtime.Worker){
		"handle": func(w *runtime.Worker) {
			runtime.Handle(w, q, func(context.Context, refund) error { return nil })
		},
		"periodic": func(w *runtime.Worker) {
			runtime.Handle(w, q, func(context.Context, ping) error { return nil })
			runtime.Periodic(w, q, runtime.Schedule{Spec: "@every 1h"}, func() refund { return refund{} })
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := quietMemory()
			defer b.Close()
			w := runtime.NewWorker(b)
			register(w)
			err := w.Run(context.Background())
			if !errors.Is(err, runtime.ErrJobType) || !strings.Contains(err.Error(), "runtime_test.refund") {
				t.Errorf("Run = %v, want ErrJobType naming runtime_test.refund", err)
			}
		})
	}
}
