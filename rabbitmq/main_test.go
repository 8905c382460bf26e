package rabbitmq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(childMain(cfg)) // a worker process started by a test
	}
	goleak.VerifyTestMain(m)
}

// wait bounds every wait of these tests on an event.
const wait = 30 * time.Second

func amqpURL() string { return brokertest.URL() }

// requireBroker skips t when no broker answers, or fails it when CI or
// QUEUEY_REQUIRE_BROKER is set.
func requireBroker(t testing.TB) { t.Helper(); brokertest.Require(t) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// records is a slog.Handler that hands every record to a channel, and
// drops those it has no room for.
type records chan slog.Record

func (r records) Enabled(context.Context, slog.Level) bool { return true }
func (r records) Handle(_ context.Context, rec slog.Record) error {
	select {
	case r <- rec.Clone():
	default:
	}
	return nil
}
func (r records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r records) WithGroup(string) slog.Handler      { return r }

// attr returns the value of rec's attribute key, or nil.
func attr(rec slog.Record, key string) any {
	var v any
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.Any()
			return false
		}
		return true
	})
	return v
}

// dial returns a backend closed when t ends.
func dial(t *testing.T, opts rabbitmq.Options) *rabbitmq.Backend {
	t.Helper()
	requireBroker(t)
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	if opts.ManagementURL == "" {
		opts.ManagementURL = brokertest.ManagementURL()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, amqpURL(), opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// rawChannel returns a plain amqp091-go channel on its own connection, for
// setting up and inspecting broker state behind the backend's back.
func rawChannel(t *testing.T) *amqp.Channel {
	t.Helper()
	requireBroker(t)
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	return ch
}

// queueName returns a name unique to this test run, and deletes the queue
// and the given companions (suffixes) when t ends.
func queueName(t *testing.T, companions ...string) string {
	t.Helper()
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-rmq-test." + strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "." + hex.EncodeToString(buf[:])
	t.Cleanup(func() {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			return
		}
		defer conn.Close()
		for _, suffix := range append([]string{"", ".dead"}, companions...) {
			ch, err := conn.Channel()
			if err != nil {
				return
			}
			_, _ = ch.QueueDelete(name+suffix, false, false, false)
			ch.Close()
		}
	})
	return name
}

// jobQueue declares a queue of job with the annotation's defaults and a
// name of its own (deleted with the given companions when t ends), and
// returns it with a producer onto it.
func jobQueue(t *testing.T, b *rabbitmq.Backend, companions ...string) (runtime.QueueConfig, *runtime.Producer) {
	t.Helper()
	q := runtime.DefaultQueueConfig(queueName(t, companions...))
	q.Kind = runtime.KindOf[job]()
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	return q, p
}

// within receives from c, failing t after the bound.
func within[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out after %v waiting for %s", wait, what)
		panic("unreachable")
	}
}

// queueLen is the number of ready messages of queue, via a passive declare.
func queueLen(t *testing.T, ch *amqp.Channel, queue string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect queue %q: %v", queue, err)
	}
	return q.Messages
}

// runWorker runs a worker of b with handler on q until t ends or stop is
// called.
func runWorker[T any](t *testing.T, b *rabbitmq.Backend, q runtime.QueueConfig, h func(ctx context.Context, job T) error) (stop func()) {
	t.Helper()
	return brokertest.RunWorker(t, b, q, h)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}
