package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// gatedBackend is a memory backend whose declares each report that they
// started and then wait for release, counting how many run at once; a
// declare of queue fail fails.
type gatedBackend struct {
	*runtime.MemoryBackend
	entered chan string
	release chan struct{}
	fail    string

	mu             sync.Mutex
	inFlight, most int
}

var errRefused = errors.New("refused")

func (b *gatedBackend) Declare(ctx context.Context, q runtime.QueueConfig) error {
	b.mu.Lock()
	b.inFlight++
	b.most = max(b.most, b.inFlight)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	b.entered <- q.Name
	if q.Name == b.fail {
		return errRefused
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.MemoryBackend.Declare(ctx, q)
}

func gated(t *testing.T, fail string) *gatedBackend {
	m := quietMemory()
	t.Cleanup(func() { m.Close() })
	return &gatedBackend{MemoryBackend: m, entered: make(chan string, runtime.DeclareConcurrency+100), release: make(chan struct{}), fail: fail}
}

func pingQueues(n int) []runtime.QueueConfig {
	qs := make([]runtime.QueueConfig, n)
	for i := range qs {
		qs[i] = runtime.QueueConfig{Name: fmt.Sprintf("ping.%d", i), Kind: runtime.KindOf[ping]()}
	}
	return qs
}

// TestNewProducerDeclaresConcurrently declares 40 queues more than
// declareConcurrency through a backend whose declares wait until released:
// declareConcurrency are under way before any is released, none more at
// once, and every queue takes jobs after.
func TestNewProducerDeclaresConcurrently(t *testing.T) {
	t.Parallel()
	b := gated(t, "")
	qs := pingQueues(runtime.DeclareConcurrency + 40)
	type result struct {
		p   *runtime.Producer
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := runtime.NewProducer(context.Background(), b, qs...)
		done <- result{p, err}
	}()
	for range runtime.DeclareConcurrency {
		recvT(t, b.entered)
	}
	close(b.release)
	r := recvT(t, done)
	if r.err != nil {
		t.Fatalf("NewProducer: %v", r.err)
	}
	if b.most > runtime.DeclareConcurrency {
		t.Errorf("%d declares at once, want at most %d", b.most, runtime.DeclareConcurrency)
	}
	for _, q := range qs {
		if _, err := runtime.Enqueue(context.Background(), r.p, q, ping{N: 1}); err != nil {
			t.Errorf("enqueue onto %q: %v", q.Name, err)
		}
	}
}

// TestWorkerRunReturnsFailedDeclare runs a worker of 40 queues one of
// whose declares is refused: Run returns that error, naming the queue.
func TestWorkerRunReturnsFailedDeclare(t *testing.T) {
	t.Parallel()
	b := gated(t, "ping.20")
	w := runtime.NewWorker(b)
	for _, q := range pingQueues(40) {
		runtime.Handle(w, q, func(context.Context, ping) error { return nil })
	}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(context.Background()) }()
	go func() {
		for range b.entered {
		}
	}()
	close(b.release)
	err := recvT(t, errc)
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), `declare queue "ping.20"`) {
		t.Errorf("Run = %v, want the refusal of queue ping.20", err)
	}
	close(b.entered)
}
