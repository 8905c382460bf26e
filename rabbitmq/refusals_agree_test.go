package rabbitmq_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestMemoryRefusesWhatBrokerRefuses: every queue name the broker refuses
// to declare, the memory backend (and so package queueytest) refuses too;
// and a job the RabbitMQ backend refuses as too large for the broker's max
// message size, the memory backend with the same max refuses too, while
// both take a job well under it.
func TestMemoryRefusesWhatBrokerRefuses(t *testing.T) {
	ctx := ctxT(t)
	mem := runtime.NewMemoryBackend(runtime.MemoryLogger(quiet()), runtime.MemoryMaxMessageSize(1<<20))
	t.Cleanup(func() { _ = mem.Close() })
	base := queueName(t)
	for _, name := range []string{
		"amq.queuey-" + base[len(base)-8:],
		strings.Repeat("q", 256),
		"queuey test " + base[len(base)-8:], // a space: the broker takes it, queuey does not
	} {
		ch := rawChannel(t) // a refused declare closes its channel
		_, berr := ch.QueueDeclare(name, false, true, true, false, nil)
		merr := mem.Declare(ctx, runtime.QueueConfig{Name: name})
		if berr != nil && merr == nil {
			t.Errorf("queue %.40q (%d bytes): the broker refused it (%v), the memory backend took it", name, len(name), berr)
		}
		if berr == nil {
			_, _ = ch.QueueDelete(name, false, false, false)
		}
	}

	b := dial(t, rabbitmq.Options{MaxMessageSize: 1 << 20})
	q, p := jobQueue(t, b)
	if err := mem.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}
	mp, err := runtime.NewProducer(ctx, mem, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1 << 10, 1<<20 - 16, 1 << 20, 1<<20 + 1} {
		payload := make([]byte, n) // never decoded: no worker runs
		_, rerr := runtime.Hooks(hooks.K).EnqueuePayload(ctx, p, q, payload)
		_, merr := runtime.Hooks(hooks.K).EnqueuePayload(ctx, mp, q, payload)
		if rerr != nil && !errors.Is(rerr, runtime.ErrTooLarge) {
			t.Fatalf("%d bytes on RabbitMQ: %v", n, rerr)
		}
		if rerr != nil && !errors.Is(merr, runtime.ErrTooLarge) {
			t.Errorf("%d bytes: RabbitMQ refused it (%v), the memory backend said %v", n, rerr, merr)
		}
		if n == 1<<10 && (rerr != nil || merr != nil) {
			t.Errorf("1 KiB refused: RabbitMQ %v, memory %v", rerr, merr)
		}
	}
}
