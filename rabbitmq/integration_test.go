package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

func TestDeclareMismatchIsExplained(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	name := queueName(t)
	raw := rawChannel(t)
	// An existing queue without x-max-priority, as an older deployment made.
	if _, err := raw.QueueDeclare(name, true, false, false, false, amqp.Table{"x-queue-type": "classic"}); err != nil {
		t.Fatal(err)
	}
	q := runtime.DefaultQueueConfig(name) // max_priority=10
	err := b.Declare(ctxT(t), q)
	if !errors.Is(err, runtime.ErrQueueMismatch) {
		t.Fatalf("Declare over a queue without priorities = %v, want ErrQueueMismatch", err)
	}
	for _, want := range []string{fmt.Sprintf("%q", name), "drain and delete", "max_priority=0", "MaxPriority: runtime.NoPriority", "FIFO"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, runtime.ErrQueueMismatch) {
		t.Errorf("error %v is not runtime.ErrQueueMismatch", err)
	}
	// The second way out works, and the refused declare left the backend
	// usable.
	q.MaxPriority = runtime.NoPriority
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatalf("Declare as it was: %v", err)
	}
	env := &runtime.Envelope{ID: "after-mismatch", Queue: name, Attempt: 1, MaxAttempts: 1}
	if err := b.Publish(ctxT(t), env, 0); err != nil {
		t.Fatalf("Publish after a refused declare: %v", err)
	}
	if n := queueLen(t, raw, name); n != 1 {
		t.Errorf("queue holds %d messages, want 1", n)
	}
}

// TestLiteralDeclaresDefaultPriority: a QueueConfig literal without
// MaxPriority declares x-max-priority=DefaultMaxPriority, as
// DefaultQueueConfig does, and NoPriority declares none. A plain declare
// with those arguments matches each (the broker refuses one that does
// not).
func TestLiteralDeclaresDefaultPriority(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	literal, none := queueName(t), queueName(t)
	for _, q := range []runtime.QueueConfig{{Name: literal}, {Name: none, MaxPriority: runtime.NoPriority}} {
		if err := b.Declare(ctxT(t), q); err != nil {
			t.Fatalf("Declare %+v: %v", q, err)
		}
	}
	for name, args := range map[string]amqp.Table{
		literal: {"x-queue-type": "classic", "x-max-priority": int32(runtime.DefaultMaxPriority)},
		none:    {"x-queue-type": "classic"},
	} {
		args["x-dead-letter-exchange"], args["x-dead-letter-routing-key"] = "", name+".dead"
		if _, err := rawChannel(t).QueueDeclare(name, true, false, false, false, args); err != nil {
			t.Errorf("declare %q with %v: %v", name, args, err)
		}
	}
}

// TestDeclareMismatchSuggestsTheSetting: the way out suggested is the
// setting that matches what exists: its queue type, its max priority.
func TestDeclareMismatchSuggestsTheSetting(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	raw := rawChannel(t)
	quorum := queueName(t)
	if _, err := raw.QueueDeclare(quorum, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	prio3 := queueName(t)
	if _, err := raw.QueueDeclare(prio3, true, false, false, false, amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(3)}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{quorum: "queue_type=quorum", prio3: "max_priority=3"} {
		err := b.Declare(ctxT(t), runtime.DefaultQueueConfig(name)) // classic, max_priority=10
		if !errors.Is(err, runtime.ErrQueueMismatch) {
			t.Fatalf("Declare over %q = %v, want ErrQueueMismatch", name, err)
		}
		for _, w := range []string{want, "drain and delete"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	q := runtime.DefaultQueueConfig(prio3)
	q.MaxPriority = 3
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Errorf("Declare as suggested: %v", err)
	}
}

// TestUnroutableNeverSucceeds mixes publishes to a deleted queue with
// publishes to a live one on the same channels: each must be paired with
// its own return or confirm.
func TestUnroutableNeverSucceeds(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	good := runtime.DefaultQueueConfig(queueName(t))
	good.Kind = runtime.KindOf[job]()
	gone := runtime.DefaultQueueConfig(queueName(t))
	for _, q := range []runtime.QueueConfig{good, gone} {
		if err := b.Declare(ctxT(t), q); err != nil {
			t.Fatal(err)
		}
	}
	raw := rawChannel(t)
	if _, err := raw.QueueDelete(gone.Name, false, false, false); err != nil {
		t.Fatal(err)
	}

	// Message ids repeat across both queues, so that many publishes in
	// flight share an id and must be paired with their returns otherwise.
	const n = 1000
	type result struct {
		good bool
		n    int
		err  error
	}
	results := make(chan result, 2*n)
	work := make(chan result, 2*n)
	for i := range n {
		work <- result{good: true, n: i}
		work <- result{good: false, n: i}
	}
	close(work)
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for r := range work {
				q := gone.Name
				if r.good {
					q = good.Name
				}
				payload, err := msgpack.Marshal(&job{N: r.n})
				if err != nil {
					t.Error(err)
					return
				}
				env := &runtime.Envelope{ID: fmt.Sprintf("id-%d", r.n%20), Queue: q, Kind: runtime.KindOf[job](), Payload: payload, Attempt: 1, MaxAttempts: 1}
				r.err = b.Publish(ctxT(t), env, 0)
				results <- r
			}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		switch {
		case r.good && r.err != nil:
			t.Errorf("publish %d to the live queue: %v", r.n, r.err)
		case !r.good && r.err == nil:
			t.Errorf("publish %d to the deleted queue reported success", r.n)
		case !r.good && !errors.Is(r.err, rabbitmq.ErrUnroutable):
			t.Errorf("publish %d to the deleted queue: %v, want ErrUnroutable", r.n, r.err)
		case !r.good && !strings.Contains(r.err.Error(), gone.Name):
			t.Errorf("unroutable error %q does not name the queue", r.err)
		}
	}

	seen := make(chan int, n)
	runWorker(t, b, good, func(_ context.Context, j job) error {
		seen <- j.N
		return nil
	})
	got := map[int]bool{}
	for len(got) < n {
		got[within(t, seen, fmt.Sprintf("good job %d of %d", len(got)+1, n))] = true
	}
}

func TestPoisonGoesToDeadLetterQueue(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	q.Prefetch = 20
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	poison := []func() error{
		func() error { return b.PublishRaw(ctxT(t), q.Name, []byte("not msgpack, no headers")) },
		func() error { return b.PublishRaw(ctxT(t), q.Name, nil) },
		func() error { // plain msgpack: not the envelope's content type
			return publishRaw(t, raw, q.Name, amqp.Publishing{ContentType: "application/msgpack", MessageId: "p1", Body: []byte{0x80}})
		},
		func() error { // plain msgpack with what look like envelope headers
			return publishRaw(t, raw, q.Name, amqp.Publishing{ContentType: "application/msgpack", MessageId: "p2",
				Headers: amqp.Table{"x-queuey-attempt": int64(1)}, Body: []byte{0x80}})
		},
		func() error { // the envelope's content type, a body cut short
			return publishRaw(t, raw, q.Name, amqp.Publishing{ContentType: "application/vnd.queuey.envelope+msgpack", MessageId: "p3",
				Body: []byte{0x97, 0x01}})
		},
	}
	const good = 1000
	wantPoison := 0
	for i := range good {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
		if i%25 == 0 {
			if err := poison[wantPoison%len(poison)](); err != nil {
				t.Fatalf("poison: %v", err)
			}
			wantPoison++
		}
	}
	done := make(chan int, good)
	runWorker(t, b, q, func(_ context.Context, j job) error {
		done <- j.N
		return nil
	})
	got := map[int]bool{}
	for len(got) < good {
		got[within(t, done, fmt.Sprintf("good job %d of %d (consumer stalled?)", len(got)+1, good))] = true
	}
	dead := deadLetters(t, b, q.Name, wantPoison)
	if list, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{}); err != nil || list.Total != wantPoison {
		t.Fatalf("%d poison messages in the dead-letter queue (%v), want %d", list.Total, err, wantPoison)
	}
	for _, d := range dead {
		if !d.Poison || !strings.Contains(d.Reason, "not a valid envelope") {
			t.Errorf("dead letter = %+v; want poison and the reason", d)
		}
	}
}

func publishRaw(t *testing.T, ch *amqp.Channel, queue string, msg amqp.Publishing) error {
	t.Helper()
	dc, err := ch.PublishWithDeferredConfirmWithContext(ctxT(t), "", queue, true, false, msg)
	if err != nil {
		return err
	}
	ok, err := dc.WaitContext(ctxT(t))
	if err != nil || !ok {
		return fmt.Errorf("raw publish not confirmed: %v", err)
	}
	return nil
}

// TestHoldQueueLease publishes a 2s deferral every 500ms for 10s: every
// publish renews the hold queue's lease, so none is lost to an expired
// queue.
func TestHoldQueueLease(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".deferred.2000")
	back := make(chan int, 64)
	runWorker(t, b, q, func(_ context.Context, j job) error {
		back <- j.N
		return nil
	})
	const n = 20
	tick := time.NewTicker(500 * time.Millisecond) // pacing the publishes, not synchronising
	defer tick.Stop()
	for i := range n {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithDelay(2*time.Second)); err != nil {
			t.Fatalf("delayed enqueue %d: %v", i, err)
		}
		if i < n-1 {
			within(t, tick.C, "the next tick")
		}
	}
	got := map[int]bool{}
	for len(got) < n {
		got[within(t, back, fmt.Sprintf("deferred job %d of %d", len(got)+1, n))] = true
	}
}

// TestDeferReturnsAheadOfBacklog: with prefetch 1, a deferred job that
// comes back while a backlog waits is the next job delivered, with the
// default max_priority and with 1, two levels.
func TestDeferReturnsAheadOfBacklog(t *testing.T) {
	for _, mp := range []int{runtime.DefaultMaxPriority, 1} {
		t.Run(fmt.Sprintf("max_priority_%d", mp), func(t *testing.T) { testDeferReturnsAheadOfBacklog(t, mp) })
	}
}

func testDeferReturnsAheadOfBacklog(t *testing.T, maxPriority int) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t, ".deferred.1000"))
	q.Kind = runtime.KindOf[job]()
	q.Prefetch, q.Concurrency = 1, 1
	q.MaxPriority = maxPriority
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	const backlog = 50
	for i := range backlog + 1 { // job 0 defers, 1..50 are the backlog
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	order := make(chan int, 2*backlog)
	var deferred sync.Once
	runWorker(t, b, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		if j.N == 0 {
			var first bool
			deferred.Do(func() { first = true })
			if first {
				return runtime.Defer(time.Second)
			}
		}
		order <- j.N
		if j.N == 1 {
			select { // hold the only prefetch slot until job 0 is back on q
			case <-release:
			case <-ctx.Done():
			}
		}
		_ = info
		return nil
	})
	if n := within(t, order, "the first backlog job"); n != 1 {
		t.Fatalf("first job run = %d, want 1", n)
	}
	raw := rawChannel(t)
	if !eventually.Wait(wait, func() bool { return queueLen(t, raw, q.Name) >= backlog }) { // 49 backlog + the returned job 0
		t.Fatalf("deferred job not back on %q within %v", q.Name, wait)
	}
	close(release)
	if n := within(t, order, "the job after the held one"); n != 0 {
		t.Errorf("job run after the deferral came back = %d, want the deferred job 0 ahead of the backlog", n)
	}
}

// TestTooLongDeferralIsRefused: a wait above MaxDeferral is refused before
// anything is acked, and the job is delivered again.
func TestTooLongDeferralIsRefused(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 7})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	d := within(t, sub.Deliveries(), "the job")
	err = d.Defer(ctxT(t), d.Envelope().Clone(), runtime.MaxDeferral+time.Second)
	if !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Fatalf("Defer beyond MaxDeferral = %v, want ErrDelayTooLong", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	sub, err = b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	d = within(t, sub.Deliveries(), "the job again")
	if d.Envelope().ID != id {
		t.Fatalf("redelivered job %q, want %q", d.Envelope().ID, id)
	}
	if err := d.Ack(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}

// TestNoDeadLetterQueuesRejects: without dead-letter queues, dead jobs and
// poison are rejected, not published anywhere.
func TestNoDeadLetterQueuesRejects(t *testing.T) {
	b := dial(t, rabbitmq.Options{NoDeadLetterQueues: true})
	q, p := jobQueue(t, b)
	raw := rawChannel(t)
	if _, err := raw.QueueDeclarePassive(q.Name+".dead", true, false, false, false, nil); err == nil {
		t.Fatalf("dead-letter queue %q declared although turned off", q.Name+".dead")
	}
	raw = rawChannel(t) // the failed passive declare closed the channel
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRaw(ctxT(t), q.Name, []byte("poison")); err != nil {
		t.Fatal(err)
	}
	// A sentinel behind the poison: once it is delivered, the poison before
	// it has been dealt with.
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 2}); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	d := within(t, sub.Deliveries(), "the job")
	if err := d.DeadLetter(ctxT(t), d.Envelope().Clone(), "permanent"); err != nil {
		t.Fatalf("DeadLetter: %v", err)
	}
	sentinel := within(t, sub.Deliveries(), "the sentinel")
	if err := sentinel.Ack(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Closing the channel makes the broker settle all of it first; anything
	// unsettled would be back on the queue.
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if n := queueLen(t, raw, q.Name); n != 0 {
		t.Errorf("queue holds %d messages after reject, want 0", n)
	}
	if _, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{}); err == nil || !strings.Contains(err.Error(), "NoDeadLetterQueues") {
		t.Errorf("DeadLetters = %v, want an error that no dead letters are kept (NoDeadLetterQueues)", err)
	}
}
