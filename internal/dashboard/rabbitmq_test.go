package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

var (
	_ Admin       = (*rabbitmq.Backend)(nil)
	_ CountReader = (*rabbitmq.Backend)(nil)
)

// rabbitQueue returns a queue config with a name of its own on the local
// broker, and deletes the queue and its dead-letter queue after the test.
func rabbitQueue(t *testing.T, url string) runtime.QueueConfig {
	t.Helper()
	suffix := make([]byte, 4)
	rand.Read(suffix)
	cfg := runtime.QueueConfig{Name: "queuey-dash-test." + t.Name() + "." + hex.EncodeToString(suffix), Kind: runtime.KindOf[job](), MaxAttempts: 3}
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("delete test queues: %v", err)
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Errorf("delete test queues: %v", err)
			return
		}
		for _, q := range []string{cfg.Name, cfg.Name + ".dead"} {
			if _, err := ch.QueueDelete(q, false, false, false); err != nil {
				t.Errorf("delete %s: %v", q, err)
			}
		}
	})
	return cfg
}

func dialRabbit(t *testing.T, url string) *rabbitmq.Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestBrowserRabbitMQ runs the operator's path in Chromium over real
// queues on the local broker.
func TestBrowserRabbitMQ(t *testing.T) {
	url := brokertest.Require(t)
	cfg := rabbitQueue(t, url)
	b := dialRabbit(t, url)   // closed after the worker stops
	browse(t, b, b, cfg, url) // the backend is the CountReader too
}

// TestMessageCounts reads the local broker's counters of a queue it
// published to, from which the throughput chart measures rates.
func TestMessageCounts(t *testing.T) {
	url := brokertest.Require(t)
	cfg := rabbitQueue(t, url)
	b := dialRabbit(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, cfg, job{To: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	var r CountReader = b
	got, err := r.MessageCounts(ctx)
	if err != nil {
		t.Fatalf("MessageCounts: %v (the management plugin is enabled by scripts/broker.sh)", err)
	}
	if _, ok := got[cfg.Name]; !ok {
		t.Errorf("MessageCounts has no entry for %s among %d queues", cfg.Name, len(got))
	}
}
