package clustertest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq"
)

// dialTimeout bounds dialling a node.
const dialTimeout = 30 * time.Second

// Dial returns a backend connected to node n, closed when tb ends. A nil
// opts.Logger discards the backend's logs. The nodes run no management
// plugin; the default management URL (port 15672 of the node's host) is
// the main broker's, which the backend finds serves another cluster and
// does not read.
func Dial(tb testing.TB, n int, opts rabbitmq.Options) *rabbitmq.Backend {
	tb.Helper()
	Require(tb)
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, URL(n), opts)
	if err != nil {
		tb.Fatalf("dial node %d: %v", n, err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}

// Channel returns a plain AMQP channel on node n, on a connection of its
// own closed when tb ends, for setting up or inspecting queues behind a
// backend's back.
func Channel(tb testing.TB, n int) *amqp.Channel {
	tb.Helper()
	Require(tb)
	conn, err := amqp.Dial(URL(n))
	if err != nil {
		tb.Fatalf("dial node %d: %v", n, err)
	}
	tb.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		tb.Fatalf("channel on node %d: %v", n, err)
	}
	return ch
}

// DeleteQueues deletes the named queues, whatever they hold, through the
// first node that answers; deleting a queue that does not exist is no
// error. Call it from a cleanup: quorum hold queues never expire.
func DeleteQueues(tb testing.TB, names ...string) {
	tb.Helper()
	for n := 1; n <= Nodes; n++ {
		conn, err := amqp.Dial(URL(n))
		if err != nil {
			continue
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			continue
		}
		for _, name := range names {
			if len(name) > 255 {
				continue // no queue can have it: a derived name too long for the broker
			}
			if _, err := ch.QueueDelete(name, false, false, false); err != nil {
				tb.Errorf("delete queue %q on node %d: %v", name, n, err)
				return
			}
		}
		return
	}
	tb.Errorf("delete %d queues: no node answers", len(names))
}
