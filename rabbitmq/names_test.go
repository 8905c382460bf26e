package rabbitmq_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// longName returns a queue name of n bytes unique to this run, deleted
// with its dead-letter queue when t ends.
func longName(t *testing.T, n int) string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-rmq-test.long." + hex.EncodeToString(buf[:]) + "."
	name += strings.Repeat("x", n-len(name))
	t.Cleanup(func() { deleteQueues(name, name+".dead") })
	return name
}

// TestDerivedNamesMustFit: Declare refuses, before declaring anything, a
// queue whose longest derived name (its hold queues') exceeds an AMQP short
// string, and a queue whose every name fits is declared and consumed even
// at 255 bytes.
func TestDerivedNamesMustFit(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	name := longName(t, 240) // 240 + ".deferred." + 10 digits = 260
	err := b.Declare(ctxT(t), runtime.DefaultQueueConfig(name))
	if !errors.Is(err, runtime.ErrInvalidConfig) {
		t.Fatalf("Declare of a queue whose hold queues cannot be named = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"hold queue", "260 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	requireNoQueues(t, name, name+".dead")

	// 255 bytes: no dead-letter queue, waits in a shared delay exchange (a
	// direct one stands in for the plugin's; no wait is published here).
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	ex := "queuey-rmq-test.long-delay." + hex.EncodeToString(buf[:])
	if err := rawChannel(t).ExchangeDeclare(ex, "direct", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	deleteExchangeAtEnd(t, ex)
	bl := dial(t, rabbitmq.Options{NoDeadLetterQueues: true, Delay: runtime.DelayPlugin, DelayExchange: ex, ProvisionedDelayExchange: true})
	q := runtime.DefaultQueueConfig(longName(t, 255))
	q.Kind = "job"
	if err := bl.Declare(ctxT(t), q); err != nil {
		t.Fatalf("Declare of a 255-byte queue: %v", err)
	}
	sub, err := bl.Consume(ctxT(t), q)
	if err != nil {
		t.Fatalf("Consume of a 255-byte queue: %v", err)
	}
	defer sub.Close()
	env := &runtime.Envelope{ID: "long-1", Queue: q.Name, Kind: "job", Attempt: 1, MaxAttempts: 1}
	if err := bl.Publish(ctxT(t), env, 0); err != nil {
		t.Fatal(err)
	}
	d := within(t, sub.Deliveries(), "the job on the 255-byte queue")
	if d.Envelope().ID != env.ID {
		t.Errorf("got job %q, want %q", d.Envelope().ID, env.ID)
	}
	if err := d.Ack(ctxT(t)); err != nil {
		t.Fatal(err)
	}
}
