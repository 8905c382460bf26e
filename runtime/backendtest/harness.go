package backendtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// Features says what a backend under test offers beyond the Backend
// interface. Optional capabilities that are interfaces (those of package
// admin) are found by type assertion instead.
type Features struct {
	// NoPriorityOrder is set when the backend's queues do not order by priority
	// (e.g. RabbitMQ 3.x quorum queues). Priority cases are skipped.
	NoPriorityOrder bool
	// CoarsePriority is set when the backend orders by priority in fewer
	// levels than max_priority (RabbitMQ 4.x quorum queues: 0-4 and 5+).
	// The exact priority-order case is skipped; a deferral, which travels
	// at max_priority, must still return ahead of the backlog.
	CoarsePriority bool
	// DeferAheadSlack is how many jobs of the backlog may run before a
	// deferral that returned ahead of them: 0 (the zero value) when the
	// backend delivers strictly by priority. RabbitMQ 4.x quorum queues
	// deliver two high-priority messages for each normal one while both
	// wait, so that normal ones are never starved: there it is 1.
	DeferAheadSlack int
	// QueueType is the queue type the suite declares. Empty means classic.
	QueueType runtime.QueueType
	// Delay is the delay mode the suite declares. Empty means the backend's
	// default.
	Delay runtime.DelayMode
	// MaxQueueNameLen is the longest queue name the backend takes in the
	// suite's delay mode. Zero means runtime.MaxQueueNameLen; RabbitMQ's
	// delay=ladder takes less, since a wait's routing key carries the name
	// after the delay's bits.
	MaxQueueNameLen int
	// OnlyWaits runs only the cases about waits (retries, deferrals, delayed
	// enqueues), for a second delay mode of the same backend.
	OnlyWaits bool
	// PublishRaw puts body on queue of b, a backend newBackend made, as a
	// message of its own, as a foreign producer might: the poison cases
	// use it to put messages that are not envelopes on a queue. Nil skips
	// them. The backend's own test supplies it, so that a backend need
	// not export a way to publish what is not an envelope.
	PublishRaw func(ctx context.Context, b runtime.Backend, queue string, body []byte) error
}

// wait bounds every wait of the suite on an event.
const wait = 30 * time.Second

type job struct {
	N    int
	Text string
}

// harness is one test's queue, producer and backend.
type harness struct {
	t   *testing.T
	b   runtime.Backend
	q   runtime.QueueConfig
	p   *runtime.Producer
	raw func(ctx context.Context, b runtime.Backend, queue string, body []byte) error // Features.PublishRaw
}

func newHarness(t *testing.T, f Features, newBackend func(t *testing.T) runtime.Backend, mod func(q *runtime.QueueConfig)) *harness {
	t.Helper()
	b := newBackend(t)
	q := runtime.DefaultQueueConfig(uniqueName(t))
	q.Kind = runtime.KindOf[job]()
	q.RetryBase = time.Second
	q.RetryMax = 4 * time.Second
	q.QueueType = runtime.QueueClassic
	if f.QueueType != "" {
		q.QueueType = f.QueueType
	}
	q.Delay = f.Delay
	if mod != nil {
		mod(&q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	return &harness{t: t, b: b, q: q, p: p, raw: f.PublishRaw}
}

func uniqueName(t *testing.T) string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := []byte("queuey-test." + t.Name())
	for i, c := range name {
		ok := c == '.' || c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			name[i] = '_'
		}
	}
	return string(name) + "." + hex.EncodeToString(buf[:])
}

func (h *harness) enqueue(j job, opts ...runtime.EnqueueOption) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	id, err := runtime.Enqueue(ctx, h.p, h.q, j, opts...)
	if err != nil {
		h.t.Fatalf("Enqueue: %v", err)
	}
	return id
}

// publishRaw puts body on the queue as a message of its own
// (Features.PublishRaw); it skips the test when the backend's test gave no
// way to.
func (h *harness) publishRaw(body []byte) {
	h.t.Helper()
	if h.raw == nil {
		h.t.Skip("no Features.PublishRaw: cannot put a message that is not an envelope on a queue")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.raw(ctx, h.b, h.q.Name, body); err != nil {
		h.t.Fatalf("PublishRaw: %v", err)
	}
}

// start runs a worker with handler h until the test ends or the returned
// stop is called; stop returns Run's error.
func (h *harness) start(handler func(ctx context.Context, j job) error, opts ...runtime.WorkerOption) (stop func() error) {
	h.t.Helper()
	w := runtime.NewWorker(h.b, opts...)
	runtime.Handle(w, h.q, handler)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(wait):
				runErr = errors.New("worker did not stop")
				h.t.Errorf("worker of %q did not stop within %v", h.q.Name, wait)
			}
		})
		return runErr
	}
	h.t.Cleanup(func() { _ = stop() })
	return stop
}

// deadLetters waits until the queue holds at least n dead letters and
// returns the n oldest, read through admin.Inspector, which leaves them in
// place; it skips the test when the backend is not an admin.Inspector.
func (h *harness) deadLetters(n int) []admin.DeadLetterInfo {
	h.t.Helper()
	in, ok := h.b.(admin.Inspector)
	if !ok {
		h.t.Skip("backend does not implement admin.Inspector")
	}
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		list, err := in.DeadLetters(ctx, h.q.Name, admin.DeadLetterPage{Limit: n})
		cancel()
		if err != nil {
			h.t.Fatalf("DeadLetters: %v", err)
		}
		if len(list.Letters) >= n {
			return list.Letters
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("got %d dead letters of %q within %v, want %d: %+v", len(list.Letters), h.q.Name, wait, n, list.Letters)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a synchronisation
	}
}

// recv receives from c within the suite's bound or fails the test.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out after %v waiting for %s", wait, what)
		panic("unreachable")
	}
}

type run struct {
	N       int
	Attempt int
	At      time.Time
	Info    runtime.Info
}

func runOf(ctx context.Context, j job) run {
	info, _ := runtime.InfoFromContext(ctx)
	return run{N: j.N, Attempt: info.Attempt, At: time.Now(), Info: info}
}

func fmtRuns(rs []run) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("(n=%d attempt=%d) ", r.N, r.Attempt)
	}
	return s
}
