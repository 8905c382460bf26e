package rabbitmq_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// startCounter is an Observer that counts Starts and hands every outcome
// to a channel.
type startCounter struct {
	starts atomic.Int64
	out    outcomes
}

func (c *startCounter) Start(ctx context.Context, _ *runtime.Envelope) context.Context {
	c.starts.Add(1)
	return ctx
}

func (c *startCounter) Outcome(ctx context.Context, o runtime.Outcome) { c.out.Outcome(ctx, o) }

// TestPoisonIsObserved: every message the worker moves to the dead-letter
// queue as poison is reported to its observers, once, as a run that
// starts and ends dead-lettered with the reason; good jobs beside them
// are reported as before.
func TestPoisonIsObserved(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	poison := []amqp.Publishing{
		{Body: []byte("not msgpack, no headers")},
		{MessageId: "empty"},
		{ContentType: "application/msgpack", MessageId: "p1", Body: []byte{0x80}},
		{ContentType: "application/msgpack", MessageId: "p2", Headers: amqp.Table{"x-queuey-attempt": int64(1)}, Body: []byte{0x80}},
		{ContentType: "application/vnd.queuey.envelope+msgpack", MessageId: "p3", Body: []byte{0x97, 0x01}},
		{ContentType: "application/vnd.queuey.envelope+msgpack", MessageId: "p4", Body: []byte{0xc1}},
	}
	for i, m := range poison {
		if err := publishRaw(t, raw, q.Name, m); err != nil {
			t.Fatalf("poison %d: %v", i, err)
		}
	}
	const good = 2
	for i := range good {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	obs := &startCounter{out: make(outcomes, 100)}
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second), runtime.WithObserver(obs))
	runtime.Handle(w, q, func(context.Context, job) error { return nil })
	stop := brokertest.Run(t, w)

	var acked, dead int
	for range len(poison) + good {
		o := within(t, obs.out, "an outcome")
		switch {
		case o.Kind == runtime.OutcomeAcked:
			acked++
		case o.Kind == runtime.OutcomeDeadLettered && strings.Contains(o.Reason, "not a valid envelope") && o.Queue == q.Name && o.JobKind == q.Kind:
			dead++
		default:
			t.Errorf("outcome %v of job %q on %q (%s): %q", o.Kind, o.JobID, o.Queue, o.JobKind, o.Reason)
		}
	}
	if n := queueLen(t, raw, q.Name+".dead"); n != len(poison) {
		t.Errorf("%d messages in the dead-letter queue, want %d", n, len(poison))
	}
	stop()
	if acked != good || dead != len(poison) {
		t.Errorf("observed %d acked and %d poison dead-lettered, want %d and %d", acked, dead, good, len(poison))
	}
	select {
	case o := <-obs.out:
		t.Errorf("one outcome too many: %v of %q", o.Kind, o.JobID)
	default:
	}
	if n := obs.starts.Load(); n != int64(len(poison)+good) {
		t.Errorf("%d starts, want one per outcome, %d", n, len(poison)+good)
	}
}
