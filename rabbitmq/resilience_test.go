package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// secret is a password that must never be seen in a log line or an error.
const secret = "s3cret-never-shown"

// deadNodeURL returns an AMQP URL, with secret as its password, of a port
// where nothing listens.
func deadNodeURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "amqp://guest:" + secret + "@" + addr + "/"
}

// allRecords drains rs and returns every record's message and attributes as
// text.
func allRecords(rs records) string {
	var b strings.Builder
	for {
		select {
		case r := <-rs:
			b.WriteString(r.Message)
			r.Attrs(func(a slog.Attr) bool {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.Any())
				return true
			})
			b.WriteString("\n")
		default:
			return b.String()
		}
	}
}

// TestFailoverOverNodes: Dial's url does not answer, so the backend
// connects through the next node; after its connections are lost it dials
// again over every node, starting with the one after the node it was on,
// and carries on. No password shows in any log line.
func TestFailoverOverNodes(t *testing.T) {
	requireBroker(t)
	rs := make(records, 256)
	ctx := ctxT(t)
	b, err := rabbitmq.Dial(ctx, deadNodeURL(t), rabbitmq.Options{Nodes: []string{amqpURL()}, Logger: slog.New(rs)})
	if err != nil {
		t.Fatalf("Dial with a dead first node: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	q, p := jobQueue(t, b)
	got := make(chan int, 10)
	runWorker(t, b, q, func(_ context.Context, j job) error { got <- j.N; return nil })
	if _, err := runtime.Enqueue(ctx, p, q, job{N: 1}); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if n := within(t, got, "the first job"); n != 1 {
		t.Fatalf("handled %d, want 1", n)
	}
	pub, con := rabbitmq.Connections(b)
	pub.Close()
	con.Close()
	if _, err := runtime.Enqueue(ctx, p, q, job{N: 2}); err != nil {
		t.Fatalf("Enqueue after the connections were lost: %v", err)
	}
	// Job 1 may run again: its ack, gathered for up to 2ms, can be lost
	// with the connection, and then the broker delivers it again.
	for again := 0; ; again++ {
		n := within(t, got, "the job after the loss")
		if n == 2 {
			break
		}
		if n != 1 || again > 0 {
			t.Fatalf("handled %d, want 2 (or job 1 once more)", n)
		}
	}
	if pub2, con2 := rabbitmq.Connections(b); pub2 == pub || con2 == con {
		t.Error("a lost connection was not replaced")
	}
	logs := allRecords(rs)
	if strings.Contains(logs, secret) {
		t.Errorf("a log line shows the password:\n%s", logs)
	}
	if !strings.Contains(logs, "connected to the broker again") {
		t.Errorf("no log line says the connection is back:\n%s", logs)
	}
}

// TestDialErrorsRedactPasswords: when no node answers, or a node's URL is
// malformed, the error names what failed without the password.
func TestDialErrorsRedactPasswords(t *testing.T) {
	ctx := ctxT(t)
	dead := deadNodeURL(t)
	_, err := rabbitmq.Dial(ctx, dead, rabbitmq.Options{Nodes: []string{deadNodeURL(t)}, Logger: quiet()})
	if err == nil {
		t.Fatal("Dial to dead nodes succeeded")
	}
	u, _ := url.Parse(dead)
	if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), u.Host) {
		t.Errorf("Dial error = %q, want the node's address and no password", err)
	}
	_, err = rabbitmq.Dial(ctx, amqpURL(), rabbitmq.Options{Nodes: []string{"amqp://guest:" + secret + "@host:notaport/"}, Logger: quiet()})
	if !errors.Is(err, runtime.ErrInvalidOption) || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "Nodes[0]") {
		t.Errorf("Dial with a malformed node = %v, want ErrInvalidOption naming Nodes[0] without the password", err)
	}
}

// TestDialGivingUpLogsNoRedial: when Dial fails, because no node
// answers or because its context ends while a node keeps silent, nothing
// logs that it is dialling again: nothing is.
func TestDialGivingUpLogsNoRedial(t *testing.T) {
	rs := make(records, 256)
	if _, err := rabbitmq.Dial(ctxT(t), deadNodeURL(t), rabbitmq.Options{Logger: slog.New(rs)}); err == nil {
		t.Fatal("Dial to a dead node succeeded")
	}

	// A node that takes the connection and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		l.Close()
		<-done
		close(accepted)
		for c := range accepted {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(ctxT(t), 300*time.Millisecond)
	defer cancel()
	if _, err := rabbitmq.Dial(ctx, "amqp://guest:guest@"+l.Addr().String()+"/", rabbitmq.Options{Logger: slog.New(rs)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial to a silent node = %v, want the context's deadline", err)
	}
	if logs := allRecords(rs); strings.Contains(logs, "dialling again") {
		t.Errorf("Dial gave up, and a log line says it is dialling again:\n%s", logs)
	}
}

// TestWorkQueueDeadLettersIntoDead: what the broker dead-letters from q on
// its own (here a reject without requeue behind the backend's back) lands in
// q.dead.
func TestWorkQueueDeadLettersIntoDead(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	ctx := ctxT(t)
	if _, err := runtime.Enqueue(ctx, p, q, job{N: 7}); err != nil {
		t.Fatal(err)
	}
	ch := rawChannel(t)
	m, ok, err := ch.Get(q.Name, false)
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if err := m.Reject(false); err != nil {
		t.Fatal(err)
	}
	if dl := deadLetters(t, b, q.Name, 1); dl[0].Poison { // the broker moves it asynchronously
		t.Fatalf("dead letter = %+v, want the rejected job", dl[0])
	}
}

// TestOldWorkQueueKept: a q declared by another program, without a
// dead-letter exchange, keeps working: Declare keeps it as it is and warns
// once, with the way to migrate, instead of failing with
// PRECONDITION_FAILED.
func TestOldWorkQueueKept(t *testing.T) {
	rs := make(records, 64)
	b := dial(t, rabbitmq.Options{Logger: slog.New(rs)})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	ch := rawChannel(t)
	if _, err := ch.QueueDeclare(q.Name, true, false, false, false, amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(q.MaxPriority)}); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for range 2 {
		if err := b.Declare(ctx, q); err != nil {
			t.Fatalf("Declare over the old shape: %v", err)
		}
	}
	p := runtime.NewProducerUndeclared(b)
	got := make(chan int, 1)
	runWorker(t, b, q, func(_ context.Context, j job) error { got <- j.N; return nil })
	if _, err := runtime.Enqueue(ctx, p, q, job{N: 3}); err != nil {
		t.Fatal(err)
	}
	within(t, got, "the job on the old queue")
	warnings := 0
	for _, line := range strings.Split(allRecords(rs), "\n") {
		if strings.Contains(line, "without a dead-letter exchange") {
			warnings++
			if !strings.Contains(line, "set_policy") || !strings.Contains(line, q.Name+".dead") {
				t.Errorf("warning does not say how to migrate: %s", line)
			}
		}
	}
	if warnings != 1 {
		t.Errorf("%d warnings about the old shape, want 1", warnings)
	}
}

// TestSecondSettleRefused: Requeue of a delivery already acked is refused
// before it reaches the wire, so the channel stays open and the next job
// still flows.
func TestSecondSettleRefused(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	ctx := ctxT(t)
	for i := range 2 {
		if _, err := runtime.Enqueue(ctx, p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := b.Consume(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	d := within(t, sub.Deliveries(), "the first delivery")
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Requeue(ctx); err == nil {
		t.Fatal("Requeue after Ack succeeded")
	}
	d2 := within(t, sub.Deliveries(), "the second delivery")
	if err := d2.Requeue(ctx); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	if err := d2.Ack(ctx); err == nil {
		t.Fatal("Ack after Requeue succeeded")
	}
	if err := d2.Requeue(ctx); err == nil {
		t.Fatal("second Requeue succeeded")
	}
	d3 := within(t, sub.Deliveries(), "the requeued delivery")
	if err := d3.Ack(ctx); err != nil {
		t.Fatalf("Ack of the requeued delivery: %v (channel closed by a second settle?)", err)
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("subscription failed: %v", err)
	}
}

// TestResubscribesUnderRunningHandler: when the consuming channel dies
// under a handler that goes on running (as when the broker's
// consumer_timeout closes it under a long job), the worker consumes the
// queue again at once, not once the handler returns; the copy of the job
// the broker delivers again does not run while the first run goes on, and
// the first run's outcome settles it (TestConsumerTimeoutKeepsQueueConsumed
// does the same through the broker's consumer_timeout).
func TestResubscribesUnderRunningHandler(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".deferred.2000")
	runs := make(chan int, 10)
	release := make(chan struct{})
	var first atomic.Bool
	seen := make(outcomes, 100)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second), runtime.WithObserver(seen))
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		runs <- j.N
		if first.CompareAndSwap(false, true) {
			select { // the long job: it outlives its channel
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil
	})
	brokertest.Run(t, w)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	long, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	within(t, runs, "the long job's first run")
	for _, c := range rabbitmq.ConsumeConnections(b) {
		c.Close()
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 2}); err != nil {
		t.Fatal(err)
	}
	if n := within(t, runs, "the next job, while the long one still runs"); n != 2 {
		t.Fatalf("ran job %d, want job 2 (the long job ran twice at once?)", n)
	}
	if o := within(t, seen, "the next job's outcome"); o.Kind != runtime.OutcomeAcked || o.JobID == long {
		t.Fatalf("outcome %v of job %s, want job 2 acked", o.Kind, o.JobID)
	}
	once.Do(func() { close(release) })
	if o := within(t, seen, "the long job's outcome"); o.Kind != runtime.OutcomeAcked || o.JobID != long || o.Attempt != 1 {
		t.Fatalf("outcome %v of job %s at attempt %d (%v), want %s acked at attempt 1", o.Kind, o.JobID, o.Attempt, o.SettleErr, long)
	}
	select {
	case n := <-runs:
		t.Fatalf("job %d ran again", n)
	default:
	}
}

// TestWarnsOfTimeoutPastConsumerTimeout: consuming a queue whose handler
// timeout is longer than RabbitMQ's default consumer_timeout logs a warning
// that says so and what to do, once per queue.
func TestWarnsOfTimeoutPastConsumerTimeout(t *testing.T) {
	rs := make(records, 256)
	b := dial(t, rabbitmq.Options{Logger: slog.New(rs)})
	q, _ := jobQueue(t, b)
	for range 2 {
		long := q
		long.Timeout = 45 * time.Minute
		sub, err := b.Consume(ctxT(t), long)
		if err != nil {
			t.Fatal(err)
		}
		_ = sub.Close()
	}
	logs := allRecords(rs)
	if n := strings.Count(logs, "default consumer_timeout"); n != 1 {
		t.Errorf("%d warnings of the consumer_timeout, want 1:\n%s", n, logs)
	}
	for _, want := range []string{q.Name, "45m0s", "x-consumer-timeout", "split"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the warning does not say %q:\n%s", want, logs)
		}
	}
}
