package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// TestProducerMiddlewareSeesEveryEnqueue checks that middleware wraps a
// single enqueue as one call with one envelope and EnqueueMany as one call
// with all of them, and that headers it adds reach the handler.
func TestProducerMiddlewareSeesEveryEnqueue(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ping", Kind: runtime.KindOf[ping]()}
	ctx := context.Background()
	p := producerOf(t, b, q)
	var (
		mu    sync.Mutex
		sizes []int
		order []string
	)
	tag := func(name string) runtime.ProducerMiddleware {
		return func(next runtime.PublishFunc) runtime.PublishFunc {
			return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
				mu.Lock()
				order = append(order, name)
				if name == "outer" {
					sizes = append(sizes, len(envs))
				}
				mu.Unlock()
				for _, env := range envs {
					if env.Headers == nil {
						env.Headers = map[string]string{}
					}
					env.Headers["x-"+name] = env.Queue
				}
				return next(ctx, envs, delay)
			}
		}
	}
	p.Use(tag("outer"), tag("inner"))

	if _, err := runtime.Enqueue(ctx, p, q, ping{N: 1}, runtime.WithHeaders(map[string]string{"x-caller": "kept"})); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.EnqueueMany(ctx, p, q, []ping{{N: 2}, {N: 3}, {N: 4}}); err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 3}; !slices.Equal(sizes, want) {
		t.Errorf("middleware saw batches of %v, want %v", sizes, want)
	}
	if want := []string{"outer", "inner", "outer", "inner"}; !slices.Equal(order, want) {
		t.Errorf("middleware ran in order %v, want %v", order, want)
	}

	w := runtime.NewWorker(b)
	got := make(chan map[string]string, 4)
	runtime.Handle(w, q, func(ctx context.Context, _ ping) error {
		info, _ := runtime.InfoFromContext(ctx)
		got <- info.Headers
		return nil
	})
	wctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(wctx) }()
	defer func() { cancel(); recvT(t, errc) }()
	for range 4 {
		h := recvT(t, got)
		if h["x-outer"] != "ping" || h["x-inner"] != "ping" {
			t.Errorf("handler saw headers %v, want x-outer and x-inner set to the queue", h)
		}
	}
}

// TestProducerMiddlewareWrongErrorCount checks that a middleware that
// answers with the wrong number of errors fails every job of the call
// instead of reporting them stored.
func TestProducerMiddlewareWrongErrorCount(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ping", Kind: runtime.KindOf[ping]()}
	ctx := context.Background()
	p := producerOf(t, b, q)
	p.Use(func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error { return nil }
	})
	if _, err := runtime.Enqueue(ctx, p, q, ping{N: 1}); !errors.Is(err, runtime.ErrInvalidOption) {
		t.Errorf("Enqueue through a middleware returning no errors = %v, want ErrInvalidOption", err)
	}
	_, err := runtime.EnqueueMany(ctx, p, q, []ping{{N: 1}, {N: 2}})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Errs) != 2 || !errors.Is(be.Errs[0], runtime.ErrInvalidOption) || !errors.Is(be.Errs[1], runtime.ErrInvalidOption) {
		t.Errorf("EnqueueMany through a middleware returning no errors = %v, want a BatchError failing both jobs", err)
	}
}

// producerOf returns a producer over b that has declared q.
func producerOf(t *testing.T, b runtime.Backend, q runtime.QueueConfig) *runtime.Producer {
	t.Helper()
	p, err := runtime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestQueueyHeadersAreReserved: every header queuey sets on a job is among
// the names producers refuse.
func TestQueueyHeadersAreReserved(t *testing.T) {
	t.Parallel()
	for _, h := range []string{runtime.HeaderTick, admin.HeaderRedrives, admin.HeaderRedrivenAt} {
		if !strings.HasPrefix(h, runtime.ReservedHeaderPrefix) {
			t.Errorf("header %q does not start with ReservedHeaderPrefix %q: an application could set it", h, runtime.ReservedHeaderPrefix)
		}
	}
}
