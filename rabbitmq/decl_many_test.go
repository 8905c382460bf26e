package rabbitmq_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestRefusedDeclareAmongManyNamesItsQueue declares 1,000 queues at once,
// one of which exists with another x-max-priority. Declares are pipelined,
// many on a channel before an answer, and a refusal closes the channel
// without saying which of them it was: the error must still name exactly
// that queue and the argument, through NewProducer and through concurrent
// Declares, and every other queue must be declared.
func TestRefusedDeclareAmongManyNamesItsQueue(t *testing.T) {
	if testing.Short() {
		t.Skip("declares 2,000 queues")
	}
	const n, bad = 1000, 517
	b := dial(t, rabbitmq.Options{})
	prefix := queueName(t)
	queues := make([]runtime.QueueConfig, n)
	var names []string
	for i := range queues {
		queues[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%d", prefix, i))
		queues[i].MaxPriority = runtime.NoPriority
		names = append(names, queues[i].Name, queues[i].Name+".dead")
	}
	t.Cleanup(func() { brokertest.DeleteQueues(amqpURL(), names...) })
	badName := queues[bad].Name
	ch := rawChannel(t)
	if _, err := ch.QueueDeclare(badName, true, false, false, false, amqp.Table{
		"x-queue-type": "classic", "x-max-priority": int32(3),
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": badName + ".dead",
	}); err != nil {
		t.Fatal(err)
	}
	names = append(names, badName) // declared again below, after the raw channel closes

	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, runtime.ErrQueueMismatch) {
			t.Fatalf("%s = %v, want ErrQueueMismatch", what, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("%q", badName)) || !strings.Contains(msg, "max_priority=3") {
			t.Errorf("%s = %q, want it to name queue %q and max_priority=3", what, msg, badName)
		}
		for _, other := range []int{bad - 1, bad + 1, 0, n - 1} {
			if strings.Contains(msg, fmt.Sprintf("%q", queues[other].Name)) {
				t.Errorf("%s = %q names queue %q too", what, msg, queues[other].Name)
			}
		}
	}

	_, err := runtime.NewProducer(ctxT(t), b, queues...)
	refused("NewProducer", err)

	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, q := range queues {
		wg.Go(func() { errs[i] = b.Declare(ctxT(t), q) })
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i == bad:
			refused("Declare of the refused queue", err)
		case err != nil:
			t.Errorf("Declare of queue %q: %v", queues[i].Name, err)
		}
	}
	// Checked on a few channels at once: one at a time, 2,000 round trips
	// on a busy broker take long.
	var checks sync.WaitGroup
	for part := range 8 {
		check := rawChannel(t)
		checks.Go(func() {
			for i := part; i < n; i += 8 {
				if i == bad {
					continue
				}
				for _, name := range []string{queues[i].Name, queues[i].Name + ".dead"} {
					if _, err := check.QueueDeclarePassive(name, true, false, false, false, nil); err != nil {
						t.Errorf("queue %q after the declares: %v", name, err)
						return
					}
				}
			}
		})
	}
	checks.Wait()
}
