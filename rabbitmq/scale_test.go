package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// countingBackend tells when a number of consumers have started.
type countingBackend struct {
	*rabbitmq.Backend
	want     int64
	started  atomic.Int64
	allReady chan struct{}
	first    sync.Once
	firstAt  time.Time // when the first Consume was called: every queue is declared
}

func (c *countingBackend) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	c.first.Do(func() { c.firstAt = time.Now() })
	s, err := c.Backend.Consume(ctx, q)
	if err == nil && c.started.Add(1) == c.want {
		close(c.allReady)
	}
	return s, err
}

// warnLog is a slog.Handler that keeps the records at warning level and
// above.
type warnLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *warnLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.recs = append(h.recs, r.Clone())
		h.mu.Unlock()
	}
	return nil
}
func (h *warnLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnLog) WithGroup(string) slog.Handler      { return h }

func (h *warnLog) take() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.recs
	h.recs = nil
	return out
}

// TestWorkerOfMoreQueuesThanOneConnectionHolds runs one worker of 2,100
// queues: more than the 2,047 channels one connection holds by default,
// each queue needing one for its consumer. They are spread over several
// consuming connections; every queue consumes, a job on each of them runs,
// an idle queue holds a few goroutines, and the worker stops cleanly,
// logging no warning from its start to its end and giving no job back to
// its queue: however long the broker takes to answer thousands of
// consumers stopping at once, their acks are not lost with a dropped
// connection.
func TestWorkerOfMoreQueuesThanOneConnectionHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("declares 2,100 queues")
	}
	const (
		queues = 2100
		// An idle queue holds its runner, its subscription's loop and
		// amqp091-go's buffer of its consumer: 3. Its pause watch and
		// acker hold none. A goroutine per concurrency slot would be 10
		// more.
		perQueue = 3
		// A backend's own: its connections' readers, heartbeats and
		// returns, the pause notices and their reads.
		shared = 60
	)
	warns := &warnLog{}
	b := dial(t, rabbitmq.Options{NoDeadLetterQueues: true, Logger: slog.New(warns)})
	cb := &countingBackend{Backend: b, want: queues, allReady: make(chan struct{})}
	prefix := queueName(t)
	names := make([]string, queues)
	for i := range names {
		names[i] = fmt.Sprintf("%s.%04d", prefix, i)
	}
	t.Cleanup(func() { brokertest.DeleteQueues(amqpURL(), names...) })

	before := goruntime.NumGoroutine()
	w := runtime.NewWorker(cb)
	handled := make(chan string, queues)
	var qs []runtime.QueueConfig
	for _, name := range names {
		q := runtime.DefaultQueueConfig(name)
		q.Kind = runtime.KindOf[job]()
		q.MaxPriority = runtime.NoPriority // cheap queues
		qs = append(qs, q)
		runtime.Handle(w, q, func(ctx context.Context, j job) error {
			handled <- q.Name
			return nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	began := time.Now()
	go func() { errc <- w.Run(ctx) }()
	select {
	case <-cb.allReady:
	case err := <-errc:
		t.Fatalf("Run returned before every queue consumed: %v", err)
	case <-time.After(3 * time.Minute):
		t.Fatalf("only %d of %d queues consuming after 3 minutes", cb.started.Load(), queues)
	}
	started := time.Since(began)
	conns := len(rabbitmq.ConsumeConnections(b))
	if conns < 3 {
		t.Errorf("%d consuming connections for %d queues, want 3 or more", conns, queues)
	}
	// Idle: the runners' own goroutines start right after their
	// subscribe; wait (bounded) for the count to settle under the bound.
	bound := before + queues*perQueue + shared
	var n int
	eventually.Wait(30*time.Second, func() bool { n = goruntime.NumGoroutine(); return n <= bound })
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	t.Logf("%d queues consuming %v after Run (declared after %v) on %d connections; %d goroutines (%.1f per queue), %.1f MiB of stacks",
		queues, started.Round(time.Millisecond), cb.firstAt.Sub(began).Round(time.Millisecond), conns, n-before, float64(n-before)/queues, float64(ms.StackInuse)/(1<<20))
	if n > bound {
		t.Errorf("%d idle queues hold %d goroutines (%.1f per queue), want at most %d per queue and %d more", queues, n-before, float64(n-before)/queues, perQueue, shared)
	}

	// A job on every queue, each handled.
	p := runtime.NewProducerUndeclared(b)
	var wg sync.WaitGroup
	next := make(chan runtime.QueueConfig)
	for range 32 {
		wg.Go(func() {
			for q := range next {
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
					t.Errorf("enqueue onto %q: %v", q.Name, err)
				}
			}
		})
	}
	for _, q := range qs {
		next <- q
	}
	close(next)
	wg.Wait()
	seen := map[string]bool{}
	for len(seen) < queues {
		select {
		case name := <-handled:
			seen[name] = true
		case <-time.After(wait):
			t.Fatalf("%d of %d queues' jobs handled; none more within %v", len(seen), queues, wait)
		}
	}

	stopping := time.Now()
	cancel()
	if err := within(t, errc, "Run to return"); err != nil {
		t.Errorf("Run: %v", err)
	}
	t.Logf("Run returned %v after its context ended", time.Since(stopping).Round(time.Millisecond))
	recs := warns.take()
	for i, r := range recs {
		if i == 5 {
			t.Errorf("... and %d more warnings", len(recs)-i)
			break
		}
		var attrs []string
		r.Attrs(func(a slog.Attr) bool {
			attrs = append(attrs, a.String())
			return true
		})
		t.Errorf("logged a warning over a clean run: %s %v", r.Message, attrs)
	}
	ch := rawChannel(t)
	var back []string
	for _, name := range names {
		if queueLen(t, ch, name) != 0 {
			back = append(back, name)
		}
	}
	if len(back) > 0 {
		t.Errorf("%d queues hold their job again after a clean stop (%s first), want none: every job was handled and acked", len(back), back[0])
	}
}

// TestRunFailsOnAQueueItCannotConsume: a queue another connection consumes
// exclusively cannot be consumed; Run says so, naming it, instead of
// subscribing again forever.
func TestRunFailsOnAQueueItCannotConsume(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, _ := jobQueue(t, b)
	other, _ := jobQueue(t, b)
	raw := rawChannel(t)
	if _, err := raw.Consume(q.Name, "exclusive", false, true, false, false, nil); err != nil {
		t.Fatal(err)
	}
	w := runtime.NewWorker(b)
	var wg sync.WaitGroup
	for _, q := range []runtime.QueueConfig{q, other} {
		runtime.Handle(w, q, func(ctx context.Context, j job) error { return nil })
	}
	errc := make(chan error, 1)
	wg.Go(func() { errc <- w.Run(ctxT(t)) })
	err := within(t, errc, "Run to return")
	wg.Wait()
	t.Logf("Run: %v", err)
	if !errors.Is(err, runtime.ErrCannotConsume) {
		t.Fatalf("Run = %v, want ErrCannotConsume", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%q", q.Name)) {
		t.Errorf("Run = %v, want it to name queue %q", err, q.Name)
	}
	if strings.Contains(err.Error(), other.Name) {
		t.Errorf("Run = %v, names queue %q, which can be consumed", err, other.Name)
	}
}

// TestConsumersSpreadOverConnectionsSurviveTheirLoss: with one channel per
// consuming connection, three queues (a consumer each) and the binding of
// pause notices take four connections. Dropping every one of them, each is
// dialled again on its own and every queue consumes again.
func TestConsumersSpreadOverConnectionsSurviveTheirLoss(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	rabbitmq.SetChannelsPerConnection(b, 1)
	w := runtime.NewWorker(b)
	type ran struct {
		queue string
		n     int
	}
	got := make(chan ran, 16)
	var qs []runtime.QueueConfig
	var producers []*runtime.Producer
	for range 3 {
		q, p := jobQueue(t, b)
		qs, producers = append(qs, q), append(producers, p)
		runtime.Handle(w, q, func(ctx context.Context, j job) error {
			got <- ran{q.Name, j.N}
			return nil
		})
	}
	defer brokertest.Run(t, w)()
	// One job per queue, handled, shows each consumes.
	handled := func(round int) {
		t.Helper()
		for i, q := range qs {
			if _, err := runtime.Enqueue(ctxT(t), producers[i], q, job{N: round}); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]bool{}
		for len(seen) < len(qs) {
			r := within(t, got, "a job of each queue")
			if r.n == round {
				seen[r.queue] = true
			}
		}
	}
	handled(1)
	conns := rabbitmq.ConsumeConnections(b)
	if len(conns) < 3 {
		t.Fatalf("%d consuming connections for 3 queues at 1 channel each, want 3 or more", len(conns))
	}
	for _, c := range conns {
		_ = c.CloseDeadline(time.Now()) // drop the socket: a loss
	}
	handled(2)
	again := rabbitmq.ConsumeConnections(b)
	if len(again) < 3 {
		t.Errorf("%d consuming connections after the loss, want 3 or more", len(again))
	}
	for _, c := range again {
		if slices.Contains(conns, c) {
			t.Errorf("a dropped connection is listed as live")
		}
	}
}

// TestWorkerDeclaresAgainAQueueDeletedUnderIt: a queue deleted on the
// broker while a worker consumes it is declared again, and its jobs run.
func TestWorkerDeclaresAgainAQueueDeletedUnderIt(t *testing.T) {
	logs := make(records, 256)
	b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
	q, p := jobQueue(t, b)
	got := make(chan int, 4)
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		got <- j.N
		return nil
	})
	defer brokertest.Run(t, w)()
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if n := within(t, got, "the first job"); n != 1 {
		t.Fatalf("job %d, want 1", n)
	}
	if _, err := rawChannel(t).QueueDelete(q.Name, false, false, false); err != nil {
		t.Fatal(err)
	}
	for {
		rec := within(t, (<-chan slog.Record)(logs), "the queue to be declared again")
		if strings.Contains(rec.Message, "declared it again") && attr(rec, "queue") == q.Name {
			break
		}
	}
	// Consumed again once declared: the job runs.
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 2}); err != nil {
		t.Fatal(err)
	}
	if n := within(t, got, "the job after the queue came back"); n != 2 {
		t.Fatalf("job %d, want 2", n)
	}
}

// TestPauseWatchesHearNoticesAfterTheirConnectionIsLost: the one binding
// to the control exchange that every watch of a backend hears is lost with
// its connection; watches of two queues still learn of a pause and a
// resume after it.
func TestPauseWatchesHearNoticesAfterTheirConnectionIsLost(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q1, _ := jobQueue(t, b)
	q2, _ := jobQueue(t, b)
	t.Cleanup(func() {
		_ = b.ResumeQueue(context.Background(), q1.Name)
		_ = b.ResumeQueue(context.Background(), q2.Name)
	})
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	w1, err := b.WatchPaused(ctx, q1.Name)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := b.WatchPaused(ctx, q2.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []<-chan bool{w1, w2} {
		if within(t, w, "the first state") {
			t.Fatal("paused before any pause")
		}
	}
	for _, c := range rabbitmq.ConsumeConnections(b) {
		_ = c.CloseDeadline(time.Now()) // drop the socket: a loss
	}
	if err := b.PauseQueue(ctxT(t), q2.Name); err != nil {
		t.Fatal(err)
	}
	if !within(t, w2, "the pause of q2") {
		t.Fatal("q2 reported resumed, want paused")
	}
	if err := b.ResumeQueue(ctxT(t), q2.Name); err != nil {
		t.Fatal(err)
	}
	if within(t, w2, "the resume of q2") {
		t.Fatal("q2 reported paused, want resumed")
	}
	select {
	case s := <-w1:
		t.Errorf("q1's watch sent %v; its state never changed", s)
	default:
	}
}

// TestPauseWithoutANoticeIsReadOnTheRecheck: a marker set with no notice
// (a pause whose notice could not be sent) is read by the watch's own
// recheck, after PauseRecheck or a little more.
func TestPauseWithoutANoticeIsReadOnTheRecheck(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, _ := jobQueue(t, b)
	t.Cleanup(func() { _ = b.ResumeQueue(context.Background(), q.Name) })
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	w, err := b.WatchPaused(ctx, q.Name)
	if err != nil {
		t.Fatal(err)
	}
	if within(t, w, "the first state") {
		t.Fatal("paused before any pause")
	}
	if _, err := rawChannel(t).QueueDeclare(rabbitmq.PausedMarker(q.Name), true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	set := time.Now()
	if !within(t, w, "the recheck's read of the marker") {
		t.Fatal("reported resumed, want paused")
	}
	t.Logf("marker set with no notice read after %v", time.Since(set).Round(time.Millisecond))
}

// TestConsumingConnectionsCloseWhenTheirConsumersEnd: the consuming
// connections dialled for a worker's queues are closed once its consumers
// are gone, a little later; the first, which every backend keeps, stays.
func TestConsumingConnectionsCloseWhenTheirConsumersEnd(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	rabbitmq.SetChannelsPerConnection(b, 1)
	w := runtime.NewWorker(b)
	got := make(chan string, 16)
	var qs []runtime.QueueConfig
	var producers []*runtime.Producer
	for range 3 {
		q, p := jobQueue(t, b)
		qs, producers = append(qs, q), append(producers, p)
		runtime.Handle(w, q, func(ctx context.Context, j job) error {
			got <- q.Name
			return nil
		})
	}
	stop := brokertest.Run(t, w)
	for i, q := range qs {
		if _, err := runtime.Enqueue(ctxT(t), producers[i], q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	for range qs {
		within(t, got, "a job of each queue")
	}
	if n := len(rabbitmq.ConsumeConnections(b)); n < 4 {
		t.Fatalf("%d consuming connections for 3 queues and the pause notices at 1 channel each, want 4", n)
	}
	stop()
	eventually.Wait(wait, func() bool { return len(rabbitmq.ConsumeConnections(b)) <= 1 })
	if n := len(rabbitmq.ConsumeConnections(b)); n != 1 {
		t.Errorf("%d consuming connections %v after the worker stopped, want the first only", n, wait)
	}
}
