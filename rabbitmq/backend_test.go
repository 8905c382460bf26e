package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
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
	q.Kind = runtime.KindOf[job]()
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
	w := runtime.NewWorker(b)
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
	if err := within(t, errc, "worker stop"); err != nil {
		t.Errorf("Run = %v, want nil after a clean shutdown", err)
	}
}

func TestPublishToUndeclaredQueueIsUnroutable(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	env := &runtime.Envelope{ID: "x", Queue: queueName(t), Attempt: 1, MaxAttempts: 1}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := b.Publish(ctx, env, 0)
	if !errors.Is(err, rabbitmq.ErrUnroutable) || !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Fatalf("Publish to a missing queue = %v, want ErrUnknownQueue and ErrUnroutable", err)
	}
	want := fmt.Sprintf(`queuey: unknown queue: %q does not exist on the broker; declare it first: runtime.NewProducer(ctx, backend, queues...) declares the queues it is given (generated code lists a package's in Queues()), and Worker.Run declares the queues it handles (`, env.Queue)
	if !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "312 NO_ROUTE)") {
		t.Errorf("Publish to a missing queue:\n got %v\nwant %s...312 NO_ROUTE)", err, want)
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

// TestQuorumPrioritiesByVersion: a quorum queue is declared without
// x-max-priority on any broker version, and Declare warns when deferrals
// cannot return ahead of the backlog: on 3.x never, on 4.x (two built-in
// levels) when max_priority is below 5.
func TestQuorumPrioritiesByVersion(t *testing.T) {
	for _, tc := range []struct {
		version string
		maxPrio int
		warn    string // in the warning, or "" for none
	}{
		{"3.10.8", 10, "3.x quorum queues have no priorities"},
		{"3.10.8", runtime.NoPriority, ""},
		{"3.10.8", 0, "3.x quorum queues have no priorities"}, // zero is the default, 10
		{"4.0.1", 3, "two priority levels"},
		{"4.0.1", 5, ""},
		{"4.0.1", 10, ""},
	} {
		t.Run(tc.version+"/"+strconv.Itoa(tc.maxPrio), func(t *testing.T) {
			logs := make(records, 16)
			b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
			rabbitmq.SetBrokerVersion(b, tc.version)
			q := runtime.DefaultQueueConfig(queueName(t))
			q.QueueType = runtime.QueueQuorum
			q.MaxPriority = tc.maxPrio
			if err := b.Declare(ctxT(t), q); err != nil {
				t.Fatalf("Declare: %v", err)
			}
			var warned []string
			for len(logs) > 0 {
				if rec := <-logs; rec.Level == slog.LevelWarn {
					warned = append(warned, rec.Message)
				}
			}
			switch {
			case tc.warn == "" && len(warned) > 0:
				t.Errorf("warned %q, want no warning", warned)
			case tc.warn != "" && (len(warned) != 1 || !strings.Contains(warned[0], tc.warn)):
				t.Errorf("warned %q, want one warning saying %q", warned, tc.warn)
			}
			// The broker took the declare: no x-max-priority on the quorum
			// queue (a 3.x broker refuses it), and the same declare again
			// matches what exists.
			if err := b.Declare(ctxT(t), q); err != nil {
				t.Fatalf("second Declare: %v", err)
			}
		})
	}
}
