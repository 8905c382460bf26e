package rabbitmq

import (
	"context"
	"errors"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/runtime"
)

// TestPluginWaitShape checks how a plugin wait goes on the wire, for a retry
// (at the job's own priority) and a deferral (at the queue's max priority),
// encoded as Delivery.Retry and Delivery.Defer encode them.
func TestPluginWaitShape(t *testing.T) {
	q := runtime.DefaultQueueConfig("emails.send")
	q.MaxPriority = 9
	env := &runtime.Envelope{ID: "j1", Queue: q.Name, Kind: "SendEmail", Attempt: 2, MaxAttempts: 5, Priority: 3, EnqueuedAt: time.Unix(1700000000, 0)}
	for _, tc := range []struct {
		name     string
		exchange string // QueueConfig.DelayExchange
		wire     uint8
		delay    time.Duration
		wantEx   string
		wantMs   int32
	}{
		{"retry", "", env.Priority, 2 * time.Second, "emails.send.delay", 2000},
		{"deferral", "", maxPriority(q), time.Second, "emails.send.delay", 1000},
		{"shared exchange", "jobs.delay", env.Priority, 1500 * time.Millisecond, "jobs.delay", 1500},
		{"longest x-delay", "", env.Priority, plugin.MaxDelay, "emails.send.delay", 1<<31 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := q
			q.DelayExchange = tc.exchange
			msg, err := codec.Encode(env, codec.Options{Priority: tc.wire})
			if err != nil {
				t.Fatal(err)
			}
			p, err := pluginWait(q, msg, tc.delay)
			if err != nil {
				t.Fatalf("pluginWait: %v", err)
			}
			if p.exchange != tc.wantEx || p.key != q.Name {
				t.Errorf("published to exchange %q with key %q, want %q with key %q", p.exchange, p.key, tc.wantEx, q.Name)
			}
			if p.mandatory {
				t.Errorf("mandatory publish: the plugin returns every one")
			}
			if v, ok := p.msg.Headers[plugin.HeaderDelay].(int32); !ok || v != tc.wantMs {
				t.Errorf("x-delay = %v (%T), want int32 %d", p.msg.Headers[plugin.HeaderDelay], p.msg.Headers[plugin.HeaderDelay], tc.wantMs)
			}
			if err := p.msg.Headers.Validate(); err != nil {
				t.Errorf("headers are not valid AMQP: %v", err)
			}
			if _, ok := msg.Headers[plugin.HeaderDelay]; ok {
				t.Errorf("the encoded message's headers were modified")
			}
			if p.msg.Priority != tc.wire {
				t.Errorf("wire priority %d, want %d", p.msg.Priority, tc.wire)
			}
			// The copy the plugin releases to q decodes to the same job.
			got, err := codec.Decode(&amqp.Delivery{
				Headers: p.msg.Headers, ContentType: p.msg.ContentType, MessageId: p.msg.MessageId,
				Type: p.msg.Type, Timestamp: p.msg.Timestamp, Priority: p.msg.Priority, Body: p.msg.Body,
			})
			if err != nil {
				t.Fatalf("decode the released copy: %v", err)
			}
			if got.ID != env.ID || got.Attempt != env.Attempt || got.Priority != env.Priority {
				t.Errorf("released copy: id %q attempt %d priority %d, want %q %d %d", got.ID, got.Attempt, got.Priority, env.ID, env.Attempt, env.Priority)
			}
		})
	}
}

func TestPluginWaitTooLong(t *testing.T) {
	q := runtime.DefaultQueueConfig("emails.send")
	_, err := pluginWait(q, amqp.Publishing{}, plugin.MaxDelay+time.Millisecond)
	if !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("pluginWait beyond the x-delay limit = %v, want ErrDelayTooLong", err)
	}
}

// offline returns a backend without connections: enough for what happens
// before anything is sent.
func offline(t *testing.T, o Options) *Backend {
	t.Helper()
	o, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return assemble(o, topology.Version{Major: 3}, nil, newConnection(nil, "publish", o.Logger), newConnection(nil, "consume", o.Logger))
}

func TestDelayModeOfQueue(t *testing.T) {
	for _, tc := range []struct {
		backend, queue runtime.DelayMode
		plugin         bool
	}{
		{"", "", false},
		{"", runtime.DelayPlugin, true},
		{runtime.DelayPlugin, "", true},
		{runtime.DelayPlugin, runtime.DelayQueue, false},
	} {
		b := offline(t, Options{Delay: tc.backend})
		q := runtime.DefaultQueueConfig("q")
		q.Delay = tc.queue
		d, err := b.waiter.delayer(q)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(pluginDelayer); ok != tc.plugin {
			t.Errorf("Options.Delay %q, QueueConfig.Delay %q: delayer %T, want plugin=%v", tc.backend, tc.queue, d, tc.plugin)
		}
	}
}

// TestPluginWaitRefusals: a wait too long or onto an undeclared queue is
// refused before anything is published (the offline backend has no
// publisher to reach).
func TestPluginWaitRefusals(t *testing.T) {
	b := offline(t, Options{Delay: runtime.DelayPlugin})
	q := runtime.DefaultQueueConfig("q").WithDefaults()
	if err := b.book.record(q); err != nil {
		t.Fatal(err)
	}
	env := &runtime.Envelope{ID: "x", Queue: q.Name, Attempt: 1, MaxAttempts: 1}
	ctx := context.Background()
	if err := b.Publish(ctx, env, runtime.MaxDeferral+time.Millisecond); !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("wait beyond MaxDeferral = %v, want ErrDelayTooLong", err)
	}
	other := *env
	other.Queue = "never-declared"
	if err := b.Publish(ctx, &other, time.Second); !errors.Is(err, runtime.ErrUnknownQueue) {
		t.Errorf("wait onto an undeclared queue = %v, want ErrUnknownQueue", err)
	}
}
