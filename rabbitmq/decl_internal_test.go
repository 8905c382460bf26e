package rabbitmq

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// TestRefusalInABatchGoesToItsDeclare sends one batch of 40 queue
// declares, all but the last without waiting for an answer, the 17th of
// which the broker refuses (the queue exists with another TTL). The broker
// closes the channel there and drops the rest, naming no declare: the
// refusal must reach the 17th alone, and every other queue be declared.
func TestRefusalInABatchGoesToItsDeclare(t *testing.T) {
	brokertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Dial(ctx, brokertest.URL(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n, bad = 40, 16
	prefix := fmt.Sprintf("queuey-rmq-test.batch-refusal.%d", time.Now().UnixNano())
	var names []string
	batch := make([]*declareReq, n)
	for i := range batch {
		q := topology.Queue{Name: fmt.Sprintf("%s.%d", prefix, i), Args: amqp.Table{"x-message-ttl": int32(60000)}}
		names = append(names, q.Name)
		batch[i] = &declareReq{q: q, ctx: ctx, done: make(chan struct{})}
	}
	defer brokertest.DeleteQueues(brokertest.URL(), names...)
	if err := b.decl.declare(ctx, topology.Queue{Name: names[bad], Args: amqp.Table{"x-message-ttl": int32(1000)}}); err != nil {
		t.Fatal(err)
	}
	b.decl.mu.Lock()
	b.decl.flushers++ // send is called as a flusher would
	b.decl.mu.Unlock()
	b.decl.send(batch)
	go b.decl.flush() // and that flusher goes on with what send put back
	for i, r := range batch {
		select {
		case <-r.done:
		case <-ctx.Done():
			t.Fatalf("declare %d not answered", i)
		}
		switch {
		case i == bad && !isCode(r.err, amqp.PreconditionFailed):
			t.Errorf("declare %d (refused) = %v, want PRECONDITION_FAILED", i, r.err)
		case i != bad && r.err != nil:
			t.Errorf("declare %d = %v, want nil", i, r.err)
		}
	}
	for i, name := range names {
		if err := b.decl.do(ctx, "check", func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
			return err
		}); err != nil {
			t.Errorf("queue %d after the batch: %v", i, err)
		}
	}
}
