package rabbitmq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

// probePlugin reports whether the broker knows the x-delayed-message
// exchange type, by declaring (and deleting) one on a throwaway
// connection: a 3.x broker without the plugin closes the whole connection
// (4.x the channel).
var probePlugin = sync.OnceValues(func() (bool, error) {
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		return false, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return false, err
	}
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-rmq-test.plugin-probe." + hex.EncodeToString(buf[:])
	err = ch.ExchangeDeclare(name, plugin.ExchangeType, false, true, false, false, plugin.ExchangeArgs())
	if plugin.IsPluginMissing(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, ch.ExchangeDelete(name, false, false)
})

// brokerURL is the broker's URL for messages, without its password.
func brokerURL() string {
	u, err := amqp.ParseURI(amqpURL())
	if err != nil {
		return "<unparsable QUEUEY_AMQP_URL>"
	}
	return fmt.Sprintf("%s://%s:%d (vhost %q)", u.Scheme, u.Host, u.Port, u.Vhost)
}

// requirePlugin skips t when the broker has no delayed-message-exchange
// plugin. That is how the broker is set up, not a failure, so it is a skip
// even when CI or QUEUEY_REQUIRE_BROKER is set; a broker that does not
// answer still fails there, as requireBroker has it.
func requirePlugin(t *testing.T) {
	t.Helper()
	requireBroker(t)
	enabled, err := probePlugin()
	if err != nil {
		t.Fatalf("probe the delayed-message-exchange plugin on %s: %v", brokerURL(), err)
	}
	if !enabled {
		t.Skipf("the rabbitmq_delayed_message_exchange plugin is not enabled on %s: enable it with `%s`", brokerURL(), plugin.EnableCommand)
	}
}

// requireNoPlugin skips t when the broker has the plugin: t needs one
// without it.
func requireNoPlugin(t *testing.T) {
	t.Helper()
	requireBroker(t)
	enabled, err := probePlugin()
	if err != nil {
		t.Fatalf("probe the delayed-message-exchange plugin on %s: %v", brokerURL(), err)
	}
	if enabled {
		t.Skipf("the rabbitmq_delayed_message_exchange plugin is enabled on %s; this test needs a broker without it", brokerURL())
	}
}

// deleteExchangeAtEnd deletes exchange when t ends.
func deleteExchangeAtEnd(t *testing.T, exchange string) {
	t.Cleanup(func() {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(exchange, false, false)
		}
	})
}

// TestPluginMissingIsExplained: on a broker without the plugin, declaring a
// plugin-mode queue fails with an error that names the queue and the
// command that enables the plugin, and the backend's publishing and
// consuming connections carry on: a 3.x broker closes the whole connection
// the exchange was declared on (4.x the channel, with another code).
func TestPluginMissingIsExplained(t *testing.T) {
	requireNoPlugin(t)
	b := dial(t, rabbitmq.Options{})
	work, p := jobQueue(t, b)
	got := make(chan int, 4)
	runWorker(t, b, work, func(_ context.Context, j job) error {
		got <- j.N
		return nil
	})
	if _, err := runtime.Enqueue(ctxT(t), p, work, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if n := within(t, got, "job 1"); n != 1 {
		t.Fatalf("ran job %d, want 1", n)
	}

	pubConn, conConn := rabbitmq.Connections(b)
	delayed := runtime.DefaultQueueConfig(queueName(t))
	delayed.Kind = runtime.KindOf[job]()
	delayed.Delay = runtime.DelayPlugin
	for i := range 2 { // the second time on a topology connection dialled again
		err := b.Declare(ctxT(t), delayed)
		if !errors.Is(err, rabbitmq.ErrPluginMissing) {
			t.Fatalf("Declare %d of a plugin-mode queue = %v, want ErrPluginMissing", i+1, err)
		}
		for _, want := range []string{`"` + delayed.Name + `"`, plugin.EnableCommand, "unknown exchange type"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Declare error %q does not mention %s", err, want)
			}
		}
	}
	requireNoQueues(t, delayed.Name, delayed.Name+".dead")
	// Not dialled again behind the scenes: the very same connections live.
	if p, c := rabbitmq.Connections(b); p != pubConn || c != conConn || p.IsClosed() || c.IsClosed() {
		t.Errorf("the publishing and consuming connections did not survive the failed Declare")
	}
	env := &runtime.Envelope{ID: "x", Queue: delayed.Name, Attempt: 1, MaxAttempts: 1}
	if err := b.Publish(ctxT(t), env, time.Second); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("wait onto the queue whose Declare failed = %v, want ErrUnknownQueue", err)
	}

	// The same backend publishes, holds waits in hold queues and consumes.
	if _, err := runtime.Enqueue(ctxT(t), p, work, job{N: 2}); err != nil {
		t.Fatalf("Enqueue after the failed Declare: %v", err)
	}
	if n := within(t, got, "job 2, published after the failed Declare"); n != 2 {
		t.Fatalf("ran job %d, want 2", n)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, work, job{N: 3}, runtime.WithDelay(time.Millisecond)); err != nil {
		t.Fatalf("delayed Enqueue after the failed Declare: %v", err)
	}
	if n := within(t, got, "job 3, through a hold queue"); n != 3 {
		t.Fatalf("ran job %d, want 3", n)
	}
	t.Cleanup(func() { deleteQueues(work.Name + ".deferred.1000") })

	// Options.Delay makes plugin mode every queue's default.
	bp := dial(t, rabbitmq.Options{Delay: runtime.DelayPlugin})
	byDefault := runtime.DefaultQueueConfig(queueName(t))
	if err := bp.Declare(ctxT(t), byDefault); !errors.Is(err, rabbitmq.ErrPluginMissing) {
		t.Errorf("Declare with Options.Delay=plugin = %v, want ErrPluginMissing", err)
	}
}

// TestPluginNotProvisioned: when the operator provisions the delay
// exchanges, Declare checks that the exchange exists and says which one is
// missing; once it exists, Declare binds the queue to it.
func TestPluginNotProvisioned(t *testing.T) {
	requireBroker(t)
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	shared := "queuey-rmq-test.shared-delay." + hex.EncodeToString(buf[:])
	b := dial(t, rabbitmq.Options{Delay: runtime.DelayPlugin, DelayExchange: shared, ProvisionedDelayExchange: true})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	for i := range 2 { // a 404 closes only the channel: the backend goes on
		err := b.Declare(ctxT(t), q)
		if !errors.Is(err, rabbitmq.ErrDelayExchangeMissing) {
			t.Fatalf("Declare %d without the exchange = %v, want ErrDelayExchangeMissing", i+1, err)
		}
		for _, want := range []string{`"` + q.Name + `"`, `"` + shared + `"`, plugin.ExchangeType} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Declare error %q does not mention %s", err, want)
			}
		}
	}
	requireNoQueues(t, q.Name, q.Name+".dead")

	// A passive declare cannot tell an exchange's type, so a direct
	// exchange stands in for the plugin's here; it routes at once what the
	// plugin would hold. That shows the binding and the publish: to the
	// shared exchange, routing key q, not mandatory, confirmed, with x-delay.
	raw := rawChannel(t)
	if err := raw.ExchangeDeclare(shared, "direct", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	deleteExchangeAtEnd(t, shared)
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatalf("Declare with the exchange provisioned: %v", err)
	}
	env := &runtime.Envelope{ID: "w1", Queue: q.Name, Kind: runtime.KindOf[job](), Attempt: 1, MaxAttempts: 1, EnqueuedAt: time.Now()}
	if err := b.Publish(ctxT(t), env, 1500*time.Millisecond); err != nil {
		t.Fatalf("wait through the provisioned exchange: %v", err)
	}
	var m amqp.Delivery
	if !eventually.Wait(wait, func() bool {
		var ok bool
		var err error
		if m, ok, err = raw.Get(q.Name, true); err != nil {
			t.Fatal(err)
		}
		return ok
	}) {
		t.Fatalf("wait not routed to %q through %q within %v", q.Name, shared, wait)
	}
	if m.Exchange != shared || m.RoutingKey != q.Name || m.MessageId != env.ID {
		t.Errorf("got message %q from exchange %q with key %q, want %q from %q with key %q", m.MessageId, m.Exchange, m.RoutingKey, env.ID, shared, q.Name)
	}
	if v, ok := m.Headers[plugin.HeaderDelay].(int32); !ok || v != 2000 {
		t.Errorf("x-delay on the wire = %v (%T), want int32 2000 (1.5s rounded up)", m.Headers[plugin.HeaderDelay], m.Headers[plugin.HeaderDelay])
	}
}

// deleteQueues deletes queues on the test broker.
func deleteQueues(names ...string) { brokertest.DeleteQueues(amqpURL(), names...) }

// TestConformancePlugin runs the suite's wait cases in plugin mode.
func TestConformancePlugin(t *testing.T) {
	requirePlugin(t)
	backendtest.Run(t, backendtest.Features{Delay: runtime.DelayPlugin, OnlyWaits: true, PublishRaw: publishRawTo}, newCleaningBackend)
}

// TestPluginShortWaitFirst: with Options.Delay=plugin, a short wait
// published after a long one is released first, through one exchange, and a
// deferral burns no attempt.
func TestPluginShortWaitFirst(t *testing.T) {
	requirePlugin(t)
	b := dial(t, rabbitmq.Options{Delay: runtime.DelayPlugin})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	deleteExchangeAtEnd(t, q.Name+".delay")
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	if err := rawChannel(t).ExchangeDeclarePassive(q.Name+".delay", plugin.ExchangeType, true, false, false, false, nil); err != nil {
		t.Fatalf("delay exchange %q not declared: %v", q.Name+".delay", err)
	}
	type ran struct {
		n, attempt int
		at         time.Time
	}
	runs := make(chan ran, 4)
	var deferOnce sync.Once
	start := time.Now()
	runWorker(t, b, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- ran{j.N, info.Attempt, time.Now()}
		if j.N == 1 {
			var first bool
			deferOnce.Do(func() { first = true })
			if first {
				return runtime.Defer(time.Second)
			}
		}
		return nil
	})
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 4}, runtime.WithDelay(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithDelay(time.Second)); err != nil {
		t.Fatal(err)
	}
	// Job 1 runs at 1s, defers 1s and runs again at 2s, all before job 4.
	want := []int{1, 1, 4}
	for i, n := range want {
		r := within(t, runs, "a run")
		if r.n != n {
			t.Fatalf("run %d was job %d, want job %d (order %v)", i+1, r.n, n, want)
		}
		if r.attempt != 1 {
			t.Errorf("run %d of job %d: attempt %d, want 1 (a deferral burns none)", i+1, r.n, r.attempt)
		}
		if n == 4 && r.at.Sub(start) < 4*time.Second-100*time.Millisecond {
			t.Errorf("the 4s wait was released after %v", r.at.Sub(start))
		}
	}
}

// TestPluginWaitToDeletedExchange: a wait to a delay exchange deleted
// after Declare fails with ErrDelayExchangeMissing naming the exchange,
// while ordinary publishes in flight at the same time all succeed: the
// broker closes the channel of a publish to a missing exchange, and waits
// have channels of their own.
func TestPluginWaitToDeletedExchange(t *testing.T) {
	requireBroker(t)
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	ex := "queuey-rmq-test.gone-delay." + hex.EncodeToString(buf[:])
	b := dial(t, rabbitmq.Options{DelayExchange: ex, ProvisionedDelayExchange: true})
	delayed := runtime.DefaultQueueConfig(queueName(t))
	delayed.Kind = runtime.KindOf[job]()
	delayed.Delay = runtime.DelayPlugin
	work := runtime.DefaultQueueConfig(queueName(t))
	work.Kind = runtime.KindOf[job]()
	raw := rawChannel(t)
	// A direct exchange stands in for the plugin's, as in
	// TestPluginNotProvisioned: a passive declare cannot tell the type.
	if err := raw.ExchangeDeclare(ex, "direct", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	deleteExchangeAtEnd(t, ex)
	for _, q := range []runtime.QueueConfig{delayed, work} {
		if err := b.Declare(ctxT(t), q); err != nil {
			t.Fatalf("Declare %q: %v", q.Name, err)
		}
	}
	if err := raw.ExchangeDelete(ex, false, false); err != nil {
		t.Fatal(err)
	}

	const good, waits = 400, 20
	goodErrs := make(chan error, good)
	waitErrs := make(chan error, waits)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range good + waits {
		wg.Go(func() {
			<-start
			if i%((good+waits)/waits) == 0 {
				env := &runtime.Envelope{ID: fmt.Sprint("w", i), Queue: delayed.Name, Kind: runtime.KindOf[job](), Attempt: 1, MaxAttempts: 1}
				waitErrs <- b.Publish(ctxT(t), env, time.Second)
				return
			}
			env := &runtime.Envelope{ID: fmt.Sprint("g", i), Queue: work.Name, Kind: runtime.KindOf[job](), Attempt: 1, MaxAttempts: 1}
			goodErrs <- b.Publish(ctxT(t), env, 0)
		})
	}
	close(start)
	wg.Wait()
	close(goodErrs)
	close(waitErrs)
	failed := 0
	for err := range goodErrs {
		if err != nil {
			if failed++; failed <= 3 {
				t.Errorf("ordinary publish: %v", err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d ordinary publishes failed beside the waits", failed)
	}
	n := 0
	for err := range waitErrs {
		n++
		if !errors.Is(err, rabbitmq.ErrDelayExchangeMissing) || !strings.Contains(err.Error(), `"`+ex+`"`) {
			t.Errorf("wait to the deleted exchange = %v, want ErrDelayExchangeMissing naming %q", err, ex)
		}
	}
	if n != waits {
		t.Errorf("%d waits, want %d", n, waits)
	}
	if got := queueLen(t, raw, work.Name); got != good {
		t.Errorf("%q holds %d jobs, want %d", work.Name, got, good)
	}
}

// requireNoQueues fails t when any of the queues exists: a failed Declare
// leaves nothing behind.
func requireNoQueues(t *testing.T, names ...string) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, name := range names {
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		_, err = ch.QueueDeclarePassive(name, true, false, false, false, nil)
		if err == nil {
			t.Errorf("queue %q exists after the failed Declare", name)
			ch.Close()
		} else if !strings.Contains(err.Error(), "NOT_FOUND") {
			t.Errorf("inspect queue %q: %v", name, err)
		}
	}
}
