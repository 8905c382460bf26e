package rabbitmq

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestBatchWaitingOutABlockLeavesTheConnectionUncorked: a batch that meets
// a resource-alarm block waits for it to end, and meanwhile the rest of
// the connection must still reach the broker: heartbeats, close-oks, a
// connection.close, other channels' methods. Waiting while corked holds
// them all back for as long as the block lasts (up to the batch's
// context), and a broker still counting heartbeats (it stops only once it
// has read a publish after the alarm) drops the connection.
//
// Here the block is set on the client's side, before a batch whose
// channel is already open; a channel.open on the same connection stands
// for the frames that must get through.
func TestBatchWaitingOutABlockLeavesTheConnectionUncorked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, p, queue := publishTestbed(ctx, t, "queuey cork test")
	if err := p.publish(ctx, queue, amqp.Publishing{MessageId: "first"}); err != nil {
		t.Fatal(err)
	}

	conn.mu.Lock()
	block := conn.block
	conn.mu.Unlock()
	block.set(amqp.Blocking{Active: true, Reason: "test alarm"})
	done := make(chan []error, 1)
	go func() {
		done <- p.publishBatch(ctx, []outMsg{
			{key: queue, msg: amqp.Publishing{MessageId: "a"}},
			{key: queue, msg: amqp.Publishing{MessageId: "b"}},
		})
	}()
	// Until the batch is parked on the block, wherever it waits for it.
	for buf := make([]byte, 1<<20); ; runtime.Gosched() {
		st := string(buf[:runtime.Stack(buf, true)])
		if strings.Contains(st, "publishBatch") && strings.Contains(st, "awaitUnblocked") {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the batch never waited for the block")
		}
	}

	octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
	other, err := callCtx(octx, conn.conn.Channel, func(c *amqp.Channel) { _ = c.Close() })
	ocancel()
	if err != nil {
		t.Errorf("channel.open on the connection while a batch waits out a block: %v (its frame is held in the cork)", err)
	} else {
		_ = other.Close()
	}

	block.set(amqp.Blocking{Active: false})
	for i, err := range <-done {
		if err != nil {
			t.Errorf("batch publish %d after the block ended: %v", i, err)
		}
	}
}
