package rabbitmq_test

import (
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestCoalescedAcksKeepRequeues: acks are coalesced into multiple acks, so
// check that one never covers a delivery that was requeued: with
// deliveries 1..6 held, 2..6 are acked while 1 is not settled, then 1 is
// requeued, which lets one multiple ack settle 2..6. Exactly delivery 1
// must come back, and nothing else.
func TestCoalescedAcksKeepRequeues(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	q.Prefetch, q.Concurrency = 6, 6
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		id, err := runtime.Enqueue(ctxT(t), p, q, job{N: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	sub, err := b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	var held []runtime.Delivery
	for range 6 {
		held = append(held, within(t, sub.Deliveries(), "a delivery"))
	}
	for _, d := range held[1:] {
		if err := d.Ack(ctxT(t)); err != nil {
			t.Fatalf("Ack: %v", err)
		}
	}
	if err := held[0].Requeue(ctxT(t)); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	sub2, err := b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()
	d := within(t, sub2.Deliveries(), "the requeued delivery")
	if d.Envelope().ID != ids[0] || d.Envelope().ID != held[0].Envelope().ID {
		t.Fatalf("redelivered %s, want the requeued %s", d.Envelope().ID, ids[0])
	}
	if err := d.Ack(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := sub2.Close(); err != nil {
		t.Fatal(err)
	}
	// A redelivered job is published again with its attempt raised before
	// its old copy is acked, so the count settles a moment after Close.
	ch := rawChannel(t)
	var n int
	if !eventually.Wait(5*time.Second, func() bool { n = queueLen(t, ch, q.Name); return n == 0 }) {
		t.Fatalf("%d jobs left on the queue, want 0: an acked delivery came back", n)
	}
}
