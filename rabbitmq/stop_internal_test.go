package rabbitmq

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// TestConsumersOfASilentConnectionGiveUpOnce: consumers of one connection
// whose cancels get no answer before their time ends drop the connection
// once: one of them reports it, and the others let go without an error
// of their own (nil, or one wrapping runtime.ErrClosed, which a worker
// does not log again).
func TestConsumersOfASilentConnectionGiveUpOnce(t *testing.T) {
	brokertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Dial(ctx, brokertest.URL(), Options{NoDeadLetterQueues: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q := runtime.DefaultQueueConfig("queuey-rmq-test.silent-stop." + time.Now().Format("150405.000000000"))
	q.Kind = "rabbitmq.silentStop"
	defer brokertest.DeleteQueues(brokertest.URL(), q.Name)
	if err := b.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}
	const consumers = 4
	var subs []*subscription
	for range consumers {
		s, err := b.consumers.start(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	conn := subs[0].conn
	for _, s := range subs[1:] {
		if s.conn != conn {
			t.Fatal("the consumers are on different connections")
		}
	}
	// From now on the broker hears nothing on the connection: what the
	// client writes is held back, so no cancel can be answered.
	subs[0].c.sock(conn).cork()

	stopCtx, stop := context.WithCancel(ctx)
	errs := make(chan error, consumers)
	for _, s := range subs {
		go func() { errs <- s.StopContext(stopCtx) }()
	}
	stop()
	reported := 0
	for range consumers {
		select {
		case err := <-errs:
			switch {
			case err == nil, errors.Is(err, runtime.ErrClosed):
			default:
				reported++
				t.Logf("reported: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("a consumer's stop did not return once its context ended")
		}
	}
	if reported != 1 {
		t.Errorf("%d consumers reported the connection dropped, want 1", reported)
	}
	if !conn.IsClosed() {
		t.Error("the connection the broker did not answer on is open, want it dropped")
	}
}
