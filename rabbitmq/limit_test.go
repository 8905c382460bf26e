package rabbitmq_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Quorum queues and the broker's delivery limit (RabbitMQ 4.x's default
// of 20, or one set by argument or policy). These tests run on every
// version; the defaults they guard against are 4.x's.

// quorumQueue is a quorum queue config of job with a name of its own,
// deleted with its dead-letter queue when t ends.
func quorumQueue(t *testing.T, maxAttempts int) runtime.QueueConfig {
	t.Helper()
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.QueueType, q.MaxPriority, q.MaxAttempts = runtime.KindOf[job](), runtime.QueueQuorum, runtime.NoPriority, maxAttempts
	q.Prefetch, q.Concurrency = 1, 1
	return q
}

// crashUntilDead delivers the one job of q to a consumer of b that never
// settles it and closes, as a worker that crashes holding the job does,
// again and again until q's dead-letter queue holds it. It returns the
// attempts the deliveries carried, in order.
func crashUntilDead(t *testing.T, b *rabbitmq.Backend, q runtime.QueueConfig) []int {
	t.Helper()
	ch := rawChannel(t)
	var attempts []int
	for queueLen(t, ch, q.Name+".dead") == 0 {
		if len(attempts) > 2*q.MaxAttempts {
			t.Fatalf("%d runs and no dead letter, want one after %d", len(attempts), q.MaxAttempts)
		}
		sub, err := b.Consume(ctxT(t), q)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-sub.Deliveries():
			attempts = append(attempts, d.Envelope().Attempt)
		case <-time.After(2 * time.Second):
			// Nothing came: the job is in the dead-letter queue, or on
			// its way there; the loop's condition tells.
		}
		if err := sub.Close(); err != nil { // unsettled: the broker puts it back
			t.Fatal(err)
		}
	}
	return attempts
}

// TestQuorumCrashesRunMaxAttempts: a job on a quorum queue with
// max_attempts 30 whose every run crashes its worker runs 30 times, as
// attempts 1 to 30, and then is a dead letter with queuey's reason: the
// broker's default delivery limit (20 on RabbitMQ 4.x) does not end it
// first.
func TestQuorumCrashesRunMaxAttempts(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := quorumQueue(t, 30)
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	attempts := crashUntilDead(t, b, q)
	if len(attempts) != 30 || attempts[0] != 1 || attempts[29] != 30 {
		t.Errorf("runs at attempts %v, want 1 to 30", attempts)
	}
	l, err := b.DeadLetter(ctxT(t), q.Name, id)
	if err != nil {
		t.Fatal(err)
	}
	if l.Attempt != 30 || l.MaxAttempts != 30 || !strings.Contains(l.Reason, "delivered 30 times without being settled") {
		t.Errorf("dead letter: attempt %d of %d, reason %q; want attempt 30 of 30, out of attempts after 30 unsettled deliveries", l.Attempt, l.MaxAttempts, l.Reason)
	}
}

// TestQuorumDeadLetterSurvivesConnectionDrops: a letter in a quorum
// dead-letter queue, held by a reader whose connection drops, 25 times
// over (more than RabbitMQ 4.x's default delivery limit of 20), is still
// there, once, and still shown.
func TestQuorumDeadLetterSurvivesConnectionDrops(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, ids := quorumDeadLetters(t, b, 1)
	dead := q.Name + ".dead"
	for i := range 25 {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		d, err := ch.Consume(dead, "", false, false, false, false, nil)
		if err != nil {
			t.Fatalf("drop %d: consume %q: %v", i+1, dead, err)
		}
		m := within(t, d, "the dead letter")
		if m.MessageId != ids[0] {
			t.Fatalf("drop %d: read %q, want the letter %s", i+1, m.MessageId, ids[0])
		}
		conn.Close() // unacked: the broker puts it back
	}
	l, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.IDs(); len(got) != 1 || got[0] != ids[0] {
		t.Fatalf("dead letters after 25 drops: %v, want %v", got, ids)
	}
}

// TestQuorumPolicyDeliveryLimitNamed: a quorum queue that exists under a
// policy with delivery-limit 5 is named at start-up, with the limit, the
// policy and the fix; the broker then dead-letters a job that crashes its
// worker 5 times, before its max_attempts of 30, and dead ls shows why:
// the broker's delivery limit, from the letter's x-death.
func TestQuorumPolicyDeliveryLimitNamed(t *testing.T) {
	m := management(t)
	q := quorumQueue(t, 30)
	if err := dial(t, rabbitmq.Options{}).Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	m.deliveryLimit(t, q.Name, 5)

	recs := make(records, 100)
	b := dial(t, rabbitmq.Options{Logger: slog.New(recs)})
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 0}); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 1)
	stop := runWorker(t, b, q, func(context.Context, job) error { ran <- struct{}{}; return nil })
	within(t, ran, "the worker's first job")
	stop()
	var named bool
	for len(recs) > 0 && !named {
		r := <-recs
		named = r.Level == slog.LevelWarn && attr(r, "queue") == q.Name &&
			strings.Contains(r.Message, "delivery limit of 5") && strings.Contains(r.Message, "policy \"queuey-test-delivery-limit-") &&
			strings.Contains(r.Message, "remove delivery-limit from policy")
	}
	if !named {
		t.Fatal("no warning at start-up names the queue, its policy's delivery limit of 5 and the fix")
	}

	id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if runs := crashUntilDead(t, b, q); len(runs) != 6 {
		t.Errorf("%d runs before the broker dead-lettered the job, want 6 (a delivery limit of 5)", len(runs))
	}
	l, err := b.DeadLetter(ctxT(t), q.Name, id)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Reason, "dead-lettered by the broker at the queue's delivery limit") {
		t.Errorf("dead letter reason %q, want the broker's delivery limit", l.Reason)
	}
}

// TestQuorumExistingDeliveryLimitKept: a quorum queue that exists with an
// x-delivery-limit argument of its own, or none, is declared as it is:
// the declare succeeds, and, where a limit is in force (the argument, or
// RabbitMQ 4.x's default), a warning names the queue, the limit and the
// fix.
func TestQuorumExistingDeliveryLimitKept(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  amqp.Table
		limit int // 0: none in force
	}{
		{"argument", amqp.Table{"x-delivery-limit": int32(7)}, 7},
		{"none", amqp.Table{}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := make(records, 100)
			b := dial(t, rabbitmq.Options{Logger: slog.New(recs)})
			q := quorumQueue(t, 30)
			args := amqp.Table{"x-queue-type": "quorum", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": q.Name + ".dead"}
			for k, v := range tc.args {
				args[k] = v
			}
			if _, err := rawChannel(t).QueueDeclare(q.Name, true, false, false, false, args); err != nil {
				t.Fatal(err)
			}
			if err := b.Declare(ctxT(t), q); err != nil {
				t.Fatalf("Declare of a queue that exists with %v: %v", tc.args, err)
			}
			limit := tc.limit
			if len(tc.args) == 0 && !strings.HasPrefix(b.ServerVersion(), "4.") {
				limit = 0 // 3.x quorum queues have no default limit
			}
			var warned *slog.Record
			for len(recs) > 0 {
				r := <-recs
				if r.Level == slog.LevelWarn && attr(r, "queue") == q.Name && strings.Contains(r.Message, "delivery limit") {
					warned = &r
				}
			}
			switch {
			case limit == 0 && warned != nil:
				t.Errorf("warned %q, want nothing: no limit in force", warned.Message)
			case limit != 0 && warned == nil:
				t.Errorf("no warning names the queue's delivery limit of %d", limit)
			case limit != 0 && (attr(*warned, "delivery_limit") != int64(limit) || !strings.Contains(warned.Message, "To lift it")):
				t.Errorf("warning %q (limit %v), want the limit %d and the fix", warned.Message, attr(*warned, "delivery_limit"), limit)
			}
		})
	}
}
