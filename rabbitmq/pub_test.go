package rabbitmq

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// TestBadHeaderLeavesChannelUsable: a header the client library cannot
// encode is refused before the channel is touched, so the channel is not
// marked broken (which would close it) and carries the next publish.
func TestBadHeaderLeavesChannelUsable(t *testing.T) {
	url := brokertest.URL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := dialConnection(ctx, []string{url}, "queuey publisher test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Skipf("no broker: %v", err)
	}
	p := newPublisher(conn, 1, DefaultMaxMessageSize, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer p.awaitLoops()
	defer conn.close()
	bad := amqp.Publishing{Headers: amqp.Table{"bad": struct{}{}}}
	if err := p.publish(ctx, "amq.rabbitmq.no-such-queue", bad); err == nil {
		t.Fatal("publish with an unencodable header succeeded")
	}
	pc := p.slots[0].cur.Load()
	if pc == nil || pc.dead.Load() || pc.ch.IsClosed() {
		t.Fatalf("channel after a refused header: %v", pc)
	}
	// The channel still publishes (here to a missing queue: returned).
	if err := p.publish(ctx, "queuey-no-such-queue", amqp.Publishing{MessageId: "x", Headers: amqp.Table{}}); !errors.Is(err, ErrUnroutable) {
		t.Errorf("next publish = %v, want ErrUnroutable", err)
	}
	if p.slots[0].cur.Load() != pc {
		t.Error("the channel was replaced")
	}
}
