package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

type runKey struct{}

// started is what a recorder's Start saw of a run's job.
type started struct{ id, queue, kind string }

// recorder is an Observer that passes every outcome on, after checking that
// it comes with the context Start returned for the same job, and names the
// queue and kind Start saw.
type recorder struct {
	outs chan runtime.Outcome
	bad  chan string
}

func newRecorder() *recorder {
	return &recorder{outs: make(chan runtime.Outcome, 64), bad: make(chan string, 64)}
}

func (r *recorder) Start(ctx context.Context, env *runtime.Envelope) context.Context {
	return context.WithValue(ctx, runKey{}, started{env.ID, env.Queue, env.Kind})
}

func (r *recorder) Outcome(ctx context.Context, o runtime.Outcome) {
	s, _ := ctx.Value(runKey{}).(started)
	switch {
	case s.id != o.JobID:
		r.bad <- "outcome of " + o.JobID + " told with the context of " + s.id
	case s.queue != o.Queue || s.kind != o.JobKind:
		r.bad <- "outcome of " + o.JobID + " names queue " + o.Queue + " and kind " + o.JobKind + "; its start named " + s.queue + " and " + s.kind
	}
	r.outs <- o
}

// next returns the next outcome, failing on a context mix-up.
func (r *recorder) next(t *testing.T) runtime.Outcome {
	t.Helper()
	select {
	case msg := <-r.bad:
		t.Fatal(msg)
	default:
	}
	return recvT(t, r.outs)
}

// startWorker runs w until the test ends.
func startWorker(t *testing.T, w *runtime.Worker) {
	t.Helper()
	brokertest.Run(t, w)
}

// TestObserverOutcomes runs one job to each handler outcome and checks what
// the observer is told, in order per job, and that the handler runs in the
// context Start returned.
func TestObserverOutcomes(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops: startWorker's cleanup runs first
	q := runtime.QueueConfig{Name: "obs", Kind: runtime.KindOf[ping](), MaxAttempts: 3}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	errFlaky := errors.New("flaky")
	var foreignCtx atomic.Int64
	var deferred sync.Map // job IDs deferred once
	runtime.Handle(w, q, func(ctx context.Context, p ping) error {
		info, _ := runtime.InfoFromContext(ctx)
		if s, _ := ctx.Value(runKey{}).(started); s.id != info.ID {
			foreignCtx.Add(1)
		}
		switch {
		case p.N == 2 && info.Attempt == 1:
			return errFlaky
		case p.N == 3:
			if _, again := deferred.LoadOrStore(info.ID, true); !again {
				return runtime.Defer(time.Millisecond)
			}
		case p.N == 4:
			return runtime.Permanent(errors.New("boom"))
		}
		return nil
	})
	ctx := context.Background()
	p := producerOf(t, b, q)
	ids := map[string]int{}
	for n := 1; n <= 4; n++ {
		id, err := runtime.Enqueue(ctx, p, q, ping{N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = n
	}
	startWorker(t, w)

	// Per job, the outcomes in the order they must come.
	want := map[int][]runtime.OutcomeKind{
		1: {runtime.OutcomeAcked},
		2: {runtime.OutcomeRetried, runtime.OutcomeAcked},
		3: {runtime.OutcomeDeferred, runtime.OutcomeAcked},
		4: {runtime.OutcomeDeadLettered},
	}
	got := map[int][]runtime.Outcome{}
	for range 6 {
		o := rec.next(t)
		n, ok := ids[o.JobID]
		if !ok {
			t.Fatalf("outcome of unknown job %+v", o)
		}
		if o.Queue != "obs" || o.JobKind != runtime.KindOf[ping]() || o.MaxAttempts != 3 {
			t.Errorf("outcome %+v: want queue obs, kind ping, max attempts 3", o)
		}
		if o.QueueLatency < 0 || o.HandlerDuration <= 0 {
			t.Errorf("outcome %+v: want queue latency >= 0 and a handler duration > 0", o)
		}
		got[n] = append(got[n], o)
	}
	for n, kinds := range want {
		if len(got[n]) != len(kinds) {
			t.Fatalf("job %d: %d outcomes %+v, want %v", n, len(got[n]), got[n], kinds)
		}
		for i, k := range kinds {
			if got[n][i].Kind != k {
				t.Errorf("job %d outcome %d = %v, want %v", n, i, got[n][i].Kind, k)
			}
		}
	}
	if o := got[2][0]; o.Attempt != 1 || o.Delay != q.WithDefaults().RetryDelay(1) || !errors.Is(o.Err, errFlaky) {
		t.Errorf("retry outcome %+v: want attempt 1, delay %v, the handler's error", o, q.WithDefaults().RetryDelay(1))
	}
	if o := got[2][1]; o.Attempt != 2 || o.Err != nil || o.QueueLatency < time.Second {
		t.Errorf("acked retry %+v: want attempt 2, no error, queue latency including the 1s wait", o)
	}
	if o := got[3][0]; o.Attempt != 1 || o.Delay != time.Millisecond {
		t.Errorf("defer outcome %+v: want attempt 1 and the requested delay 1ms", o)
	}
	if o := got[3][1]; o.Attempt != 1 {
		t.Errorf("acked deferral %+v: want attempt 1, since a deferral burns none", o)
	}
	if o := got[4][0]; o.Reason != "permanent: boom" || o.Err == nil {
		t.Errorf("dead-letter outcome %+v: want reason %q and the handler's error", o, "permanent: boom")
	}
	if n := foreignCtx.Load(); n != 0 {
		t.Errorf("%d runs did not get the context the observer's Start returned", n)
	}
}

// failingAck is a memory backend whose deliveries fail their first Ack,
// as a lost channel would.
type failingAck struct {
	*runtime.MemoryBackend
	failed atomic.Bool
}

var errAckLost = errors.New("ack lost")

func (b *failingAck) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	sub, err := b.MemoryBackend.Consume(ctx, q)
	if err != nil {
		return nil, err
	}
	s := &failingSub{Subscription: sub, b: b, ch: make(chan runtime.Delivery)}
	go s.forward()
	return s, nil
}

type failingSub struct {
	runtime.Subscription
	b  *failingAck
	ch chan runtime.Delivery
}

func (s *failingSub) forward() {
	defer close(s.ch)
	for d := range s.Subscription.Deliveries() {
		s.ch <- &failingDelivery{Delivery: d, b: s.b}
	}
}

func (s *failingSub) Deliveries() <-chan runtime.Delivery { return s.ch }

type failingDelivery struct {
	runtime.Delivery
	b *failingAck
}

func (d *failingDelivery) Ack(ctx context.Context) error {
	if d.b.failed.CompareAndSwap(false, true) {
		return errAckLost
	}
	return d.Delivery.Ack(ctx)
}

func (d *failingDelivery) Redelivered() bool {
	r, ok := d.Delivery.(runtime.Redelivery)
	return ok && r.Redelivered()
}

// TestObserverRequeueAndRedelivery checks that a settle that fails is told
// as OutcomeRequeued with its error, and the next run of the job first as
// OutcomeRedelivered, then acked.
func TestObserverRequeueAndRedelivery(t *testing.T) {
	t.Parallel()
	b := &failingAck{MemoryBackend: quietMemory()}
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops: startWorker's cleanup runs first
	q := runtime.QueueConfig{Name: "obs", Kind: runtime.KindOf[ping]()}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	runtime.Handle(w, q, func(ctx context.Context, p ping) error { return nil })
	ctx := context.Background()
	p := producerOf(t, b, q)
	id, err := runtime.Enqueue(ctx, p, q, ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	// A redelivery counts as an attempt: the requeued job runs again as
	// attempt 2.
	for i, want := range []runtime.OutcomeKind{runtime.OutcomeRequeued, runtime.OutcomeRedelivered, runtime.OutcomeAcked} {
		attempt := 1
		if want != runtime.OutcomeRequeued {
			attempt = 2
		}
		o := rec.next(t)
		if o.Kind != want || o.JobID != id || o.Attempt != attempt {
			t.Fatalf("outcome %d = %+v, want %v of job %s at attempt %d", i, o, want, id, attempt)
		}
		if want == runtime.OutcomeRequeued && !errors.Is(o.SettleErr, errAckLost) {
			t.Errorf("requeue outcome's SettleErr = %v, want %v", o.SettleErr, errAckLost)
		}
	}
}

// TestObserverAbandoned checks that a run cut off by the shutdown timeout is
// told as OutcomeAbandoned, and that its next run, by another worker, is a
// redelivery.
func TestObserverAbandoned(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops: startWorker's cleanup runs first
	q := runtime.QueueConfig{Name: "obs", Kind: runtime.KindOf[ping]()}
	rec := newRecorder()
	running := make(chan struct{}, 1)
	stuck := func(ctx context.Context, p ping) error {
		running <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	w := runtime.NewWorker(b, runtime.WithObserver(rec), runtime.WithShutdownTimeout(time.Millisecond))
	runtime.Handle(w, q, stuck)
	ctx := context.Background()
	p := producerOf(t, b, q)
	if _, err := runtime.Enqueue(ctx, p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(wctx) }()
	recvT(t, running)
	cancel()
	if err := recvT(t, errc); !errors.Is(err, runtime.ErrShutdownTimeout) {
		t.Fatalf("Run = %v, want ErrShutdownTimeout", err)
	}
	if o := rec.next(t); o.Kind != runtime.OutcomeAbandoned {
		t.Fatalf("outcome = %+v, want abandoned", o)
	}

	w2 := runtime.NewWorker(b, runtime.WithObserver(rec))
	runtime.Handle(w2, q, func(ctx context.Context, p ping) error { return nil })
	startWorker(t, w2)
	for _, want := range []runtime.OutcomeKind{runtime.OutcomeRedelivered, runtime.OutcomeAcked} {
		if o := rec.next(t); o.Kind != want {
			t.Fatalf("outcome = %+v, want %v", o, want)
		}
	}
}

// TestObserverStartNamesTheOutcomesKind enqueues a job that names no kind
// (a producer middleware clears it): it is dead-lettered, and its observer
// is told the same queue and kind at the start of the run as in its
// outcome, the queue's kind standing in for the missing one.
func TestObserverStartNamesTheOutcomesKind(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.QueueConfig{Name: "obs", Kind: runtime.KindOf[ping]()}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	runtime.Handle(w, q, func(context.Context, ping) error { return nil })
	p := producerOf(t, b, q)
	p.Use(func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			for _, env := range envs {
				env.Kind = ""
			}
			return next(ctx, envs, delay)
		}
	})
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	if o := rec.next(t); o.Kind != runtime.OutcomeDeadLettered || o.JobKind != runtime.KindOf[ping]() || o.Queue != "obs" {
		t.Fatalf("outcome = %+v, want dead_lettered, of kind ping on queue obs", o)
	}
	select {
	case msg := <-rec.bad:
		t.Fatal(msg)
	default:
	}
}

// TestObserverSeesPoison: every message the memory backend moves to the
// dead letters as poison is reported to the worker's observers once,
// dead-lettered with the reason, with the context of its own Start.
func TestObserverSeesPoison(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.QueueConfig{Name: "obs-poison", Kind: runtime.KindOf[ping]()}
	p := producerOf(t, b, q)
	const poison = 6
	for i := range poison {
		if err := runtime.Hooks(hooks.K).PublishRaw(context.Background(), b, q.Name, []byte{0xc1, byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	runtime.Handle(w, q, func(context.Context, ping) error { return nil })
	startWorker(t, w)
	dead := 0
	for range poison + 1 {
		switch o := rec.next(t); {
		case o.Kind == runtime.OutcomeDeadLettered && strings.Contains(o.Reason, "not a valid envelope") && o.Queue == q.Name:
			dead++
		case o.Kind != runtime.OutcomeAcked:
			t.Errorf("outcome %v: %q", o.Kind, o.Reason)
		}
	}
	if dead != poison {
		t.Errorf("%d poison messages observed, want %d", dead, poison)
	}
	select {
	case o := <-rec.outs:
		t.Errorf("one outcome too many: %v", o.Kind)
	default:
	}
}
