package rabbitmq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

type job struct {
	N int
}

func TestEnqueueAndHandle(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = "job"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	for i := range n {
		if _, err := runtime.Enqueue(ctx, p, q, job{N: i}, runtime.WithHeaders(map[string]string{"k": "v"})); err != nil {
			t.Fatalf("Enqueue %d: %v", i, err)
		}
	}
	got := make(chan runtime.Info, n)
	w := runtime.NewWorker(b, runtime.WithLogger(quiet()))
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		got <- info
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(wctx) }()
	for range n {
		info := within(t, got, "a handled job")
		if info.Attempt != 1 || info.Headers["k"] != "v" || info.EnqueuedAt.IsZero() {
			t.Errorf("info = %+v, want attempt 1, header k=v, an enqueue time", info)
		}
	}
	stop()
	if err := within(t, errc, "worker stop"); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestPublishToUndeclaredQueueIsUnroutable(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	env := &runtime.Envelope{ID: "x", Queue: queueName(t), Attempt: 1, MaxAttempts: 1}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := b.Publish(ctx, env, 0)
	if !errors.Is(err, rabbitmq.ErrUnroutable) {
		t.Fatalf("Publish to a missing queue = %v, want ErrUnroutable", err)
	}
	err = b.Publish(ctx, env, time.Second)
	if !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Fatalf("delayed Publish to an undeclared queue = %v, want ErrUnknownQueue", err)
	}
	if err := b.PublishRaw(ctx, env.Queue, []byte("x")); !errors.Is(err, rabbitmq.ErrUnroutable) {
		t.Fatalf("PublishRaw to a missing queue = %v, want ErrUnroutable", err)
	}
}

func TestCloseTwice(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	if err := b.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	err := b.Declare(context.Background(), runtime.DefaultQueueConfig("x"))
	if !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("Declare after Close = %v, want ErrClosed", err)
	}
}
