package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// endingBackend is a memory backend whose subscriptions are EndNotifiers
// and DeadLetterNotifiers, and can be made to end as a broker's closed
// channel ends them: deliveries close, Err says why, and every unsettled
// delivery goes back to the queue, its settles failing with ErrClosed.
type endingBackend struct {
	*runtime.MemoryBackend
	subs chan *endingSub // each subscription, as it is made
	// hold, when set, wraps the first delivery of the first
	// subscription so that its first Envelope call closes reached and
	// waits for hold.
	hold, reached chan struct{}
	held          atomic.Bool
}

func (b *endingBackend) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	inner, err := b.MemoryBackend.Consume(ctx, q)
	if err != nil {
		return nil, err
	}
	s := &endingSub{inner: inner, b: b, out: make(chan runtime.Delivery), endc: make(chan struct{}), kill: make(chan struct{})}
	go s.forward()
	b.subs <- s
	return s, nil
}

type endingSub struct {
	inner runtime.Subscription
	b     *endingBackend
	out   chan runtime.Delivery
	endc  chan struct{}
	kill  chan struct{}

	mu     sync.Mutex
	err    error
	killed bool
	// listens records NotifyDeadLettered's calls: "fn" or "nil".
	listens []string
}

func (s *endingSub) forward() {
	defer close(s.endc)
	defer close(s.out)
	for {
		select {
		case d, ok := <-s.inner.Deliveries():
			if !ok {
				return
			}
			if s.b.hold != nil && s.b.held.CompareAndSwap(false, true) {
				d = &heldDelivery{Delivery: d, hold: s.b.hold, reached: s.b.reached}
			}
			select {
			case s.out <- d:
			case <-s.kill:
				return
			}
		case <-s.kill:
			return
		}
	}
}

// end ends s as a channel the broker closed.
func (s *endingSub) end() {
	s.mu.Lock()
	if !s.killed {
		s.killed = true
		s.err = errors.New("channel closed by the broker")
		close(s.kill)
	}
	s.mu.Unlock()
	_ = s.inner.Close() // unsettled deliveries go back; their settles fail with ErrClosed
	<-s.endc
}

func (s *endingSub) Deliveries() <-chan runtime.Delivery { return s.out }
func (s *endingSub) Ended() <-chan struct{}              { return s.endc }
func (s *endingSub) Stop() error                         { return s.inner.Stop() }
func (s *endingSub) Close() error                        { return s.inner.Close() }

func (s *endingSub) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	return s.inner.Err()
}

func (s *endingSub) NotifyDeadLettered(fn func(runtime.DeadLetter)) {
	s.mu.Lock()
	if fn == nil {
		s.listens = append(s.listens, "nil")
	} else {
		s.listens = append(s.listens, "fn")
	}
	s.mu.Unlock()
	s.inner.(runtime.DeadLetterNotifier).NotifyDeadLettered(fn)
}

var (
	_ runtime.EndNotifier        = (*endingSub)(nil)
	_ runtime.DeadLetterNotifier = (*endingSub)(nil)
)

// heldDelivery's first Envelope call waits for hold to close: the
// handler goroutine has taken the delivery and not begun its run yet.
type heldDelivery struct {
	runtime.Delivery
	hold, reached chan struct{}
	once          sync.Once
}

func (d *heldDelivery) Envelope() *runtime.Envelope {
	d.once.Do(func() {
		close(d.reached)
		<-d.hold
	})
	return d.Delivery.Envelope()
}

// blockingStart is an Observer whose first Start waits for hold, and that
// hands every outcome to outs.
type blockingStart struct {
	hold    chan struct{}
	started chan struct{} // closed as the first Start begins to wait
	once    sync.Once
	outs    chan runtime.Outcome
}

func (o *blockingStart) Start(ctx context.Context, _ *runtime.Envelope) context.Context {
	if o.hold != nil {
		o.once.Do(func() {
			close(o.started)
			<-o.hold
		})
	}
	return ctx
}

func (o *blockingStart) Outcome(_ context.Context, out runtime.Outcome) {
	select {
	case o.outs <- out:
	default:
	}
}

// TestSubscriptionEndingBeforeRunBeginsRunsJobOnce: when the subscription
// ends after a handler goroutine took a job and before its run began (its
// observers starting, or the goroutine not yet running), the job runs
// once in the worker, never beside the copy that the backend delivers
// again, and ends acked, reported once.
func TestSubscriptionEndingBeforeRunBeginsRunsJobOnce(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"taking the delivery", "observers starting"} {
		t.Run(where, func(t *testing.T) {
			b := &endingBackend{MemoryBackend: quietMemory(), subs: make(chan *endingSub, 10)}
			defer b.Close()
			hold := make(chan struct{})
			var holdOnce sync.Once
			release := func() { holdOnce.Do(func() { close(hold) }) }
			defer release()
			obs := &blockingStart{outs: make(chan runtime.Outcome, 100), started: make(chan struct{})}
			reached := obs.started
			if where == "taking the delivery" {
				b.hold, b.reached = hold, make(chan struct{})
				reached = b.reached
			} else {
				obs.hold = hold
			}
			q := runtime.QueueConfig{Name: "orphan", Kind: runtime.KindOf[ping](), Concurrency: 1, Prefetch: 1}
			var running, most, runs atomic.Int32
			w := runtime.NewWorker(b, runtime.WithObserver(obs), runtime.WithShutdownTimeout(10*time.Second))
			runtime.Handle(w, q, func(ctx context.Context, p ping) error {
				runs.Add(1)
				n := running.Add(1)
				defer running.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				return nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- w.Run(ctx) }()
			p, err := runtime.NewProducer(ctx, b, q)
			if err != nil {
				t.Fatal(err)
			}
			id, err := runtime.Enqueue(ctx, p, q, ping{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			first := recvT(t, b.subs)
			recvT(t, reached)
			first.end()
			recvT(t, b.subs) // the worker consumes again at once
			release()

			o := recvT(t, obs.outs)
			for !o.Kind.Settled() { // the copy's OutcomeRedelivered
				o = recvT(t, obs.outs)
			}
			if o.JobID != id || o.Kind != runtime.OutcomeAcked {
				t.Fatalf("outcome %v of job %s (settle error %v), want %s acked", o.Kind, o.JobID, o.SettleErr, id)
			}
			cancel()
			if err := recvT(t, errc); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("the job ran %d times (at most %d at once), want once", n, most.Load())
			}
			for len(obs.outs) > 0 {
				if o := <-obs.outs; o.Kind.Settled() {
					t.Errorf("another outcome %v of job %s (settle error %v)", o.Kind, o.JobID, o.SettleErr)
				}
			}
		})
	}
}

// TestOrphansSharingAKeyEachSettleACopy: two jobs with one ID and one
// enqueue time, both running when the subscription ends, are each
// recorded: each copy that comes again settles with one of their
// outcomes, neither runs again, and each run is reported once.
func TestOrphansSharingAKeyEachSettleACopy(t *testing.T) {
	b := &endingBackend{MemoryBackend: quietMemory(), subs: make(chan *endingSub, 10)}
	defer b.Close()
	obs := &blockingStart{outs: make(chan runtime.Outcome, 100)}
	q := runtime.QueueConfig{Name: "twins", Kind: runtime.KindOf[ping](), Concurrency: 2, Prefetch: 2}
	var runs atomic.Int32
	started := make(chan int, 10)
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	w := runtime.NewWorker(b, runtime.WithObserver(obs), runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, p ping) error {
		runs.Add(1)
		started <- p.N
		<-release
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	p.Use(func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			for _, env := range envs {
				env.EnqueuedAt = at
			}
			return next(ctx, envs, delay)
		}
	})
	for n := range 2 {
		if _, err := runtime.Enqueue(ctx, p, q, ping{N: n}, runtime.WithID("twin")); err != nil {
			t.Fatal(err)
		}
	}
	first := recvT(t, b.subs)
	recvT(t, started)
	recvT(t, started)
	first.end()
	recvT(t, b.subs)
	releaseOnce.Do(func() { close(release) })

	for range 2 {
		o := recvT(t, obs.outs)
		for !o.Kind.Settled() {
			o = recvT(t, obs.outs)
		}
		if o.JobID != "twin" || o.Kind != runtime.OutcomeAcked || o.Attempt != 1 {
			t.Fatalf("outcome %v of job %s at attempt %d (settle error %v), want twin acked at attempt 1", o.Kind, o.JobID, o.Attempt, o.SettleErr)
		}
	}
	cancel()
	if err := recvT(t, errc); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("%d runs, want 2: each job once", n)
	}
	for len(obs.outs) > 0 {
		if o := <-obs.outs; o.Kind.Settled() {
			t.Errorf("another outcome %v of job %s (settle error %v)", o.Kind, o.JobID, o.SettleErr)
		}
	}
}

// TestOrphanOnLastAttemptSettlesItsCopy: the copy of a job on its last
// attempt (max_attempts=1), delivered again as its subscription ended
// under its run, is not dead-lettered by the backend's count of
// redeliveries: the run's outcome settles it, at attempt 1.
func TestOrphanOnLastAttemptSettlesItsCopy(t *testing.T) {
	t.Parallel()
	b := &endingBackend{MemoryBackend: quietMemory(), subs: make(chan *endingSub, 10)}
	defer b.Close()
	obs := &blockingStart{outs: make(chan runtime.Outcome, 100)}
	q := runtime.QueueConfig{Name: "last", Kind: runtime.KindOf[ping](), MaxAttempts: 1}
	var runs atomic.Int32
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) })
	w := runtime.NewWorker(b, runtime.WithObserver(obs), runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, p ping) error {
		runs.Add(1)
		started <- struct{}{}
		<-release
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	id, err := runtime.Enqueue(ctx, p, q, ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	first := recvT(t, b.subs)
	recvT(t, started)
	first.end()
	recvT(t, b.subs)
	releaseOnce.Do(func() { close(release) })
	o := recvT(t, obs.outs)
	for !o.Kind.Settled() {
		o = recvT(t, obs.outs)
	}
	if o.JobID != id || o.Kind != runtime.OutcomeAcked || o.Attempt != 1 {
		t.Fatalf("outcome %v of job %s at attempt %d (reason %q), want %s acked at attempt 1", o.Kind, o.JobID, o.Attempt, o.Reason, id)
	}
	cancel()
	if err := recvT(t, errc); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	dead, err := b.DeadLetters(context.Background(), q.Name, admin.DeadLetterPage{})
	if err != nil || dead.Total != 0 {
		t.Errorf("dead letters %+v (%v), want none", dead, err)
	}
}
