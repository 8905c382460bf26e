package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

func testURL() string { return brokertest.URL() }

func requireBroker(t *testing.T) { t.Helper(); brokertest.Require(t) }

// TestConnectionLossFailsUnconfirmedPublishes drops the publishing
// connection under publishes in flight: each publish reported successful is
// on the queue, the others fail rather than hang, and the backend publishes
// again on a new connection afterwards.
func TestConnectionLossFailsUnconfirmedPublishes(t *testing.T) {
	requireBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Dial(ctx, testURL(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q := runtime.DefaultQueueConfig(fmt.Sprintf("queuey-rmq-test.loss.%d", time.Now().UnixNano()))
	defer func() {
		conn, err := amqp.Dial(testURL())
		if err == nil {
			ch, _ := conn.Channel()
			_, _ = ch.QueueDelete(q.Name, false, false, false)
			_, _ = ch.QueueDelete(q.Name+".dead", false, false, false)
			conn.Close()
		}
	}()
	if err := b.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}

	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	started := make(chan struct{})
	var once sync.Once
	for w := range 16 {
		wg.Go(func() {
			for i := range 200 {
				env := &runtime.Envelope{ID: fmt.Sprintf("%d-%d", w, i), Queue: q.Name, Attempt: 1, MaxAttempts: 1}
				err := b.Publish(ctx, env, 0)
				once.Do(func() { close(started) })
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, ctx.Err()) && ctx.Err() != nil:
					t.Errorf("publish hung until the test's deadline: %v", err)
					return
				default:
					failed.Add(1)
				}
			}
		})
	}
	<-started
	b.pubConn.mu.Lock()
	conn := b.pubConn.conn
	b.pubConn.mu.Unlock()
	_ = conn.Close() // as if the broker went away
	wg.Wait()

	raw, err := amqp.Dial(testURL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	ch, err := raw.Channel()
	if err != nil {
		t.Fatal(err)
	}
	st, err := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if int64(st.Messages) < ok.Load() {
		t.Errorf("%d publishes reported successful but only %d messages on the queue", ok.Load(), st.Messages)
	}
	t.Logf("%d publishes confirmed, %d failed, %d messages on the queue", ok.Load(), failed.Load(), st.Messages)
	if failed.Load() == 0 {
		t.Log("no publish was in flight when the connection closed")
	}
	// The backend dials a new connection for the next publish.
	env := &runtime.Envelope{ID: "after", Queue: q.Name, Attempt: 1, MaxAttempts: 1}
	if err := b.Publish(ctx, env, 0); err != nil {
		t.Errorf("publish after the connection was replaced: %v", err)
	}
}
