package rabbitmq_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestQuorumOverClassicNamesQueueType: a queue declared classic (with
// priorities, the default) and then as quorum is refused with advice about
// queue_type, not only max_priority, which is what the broker names.
func TestQuorumOverClassicNamesQueueType(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t, ".dead"))
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	q.QueueType = runtime.QueueQuorum
	err := b.Declare(ctxT(t), q)
	if !errors.Is(err, runtime.ErrQueueMismatch) {
		t.Fatalf("quorum over classic = %v, want ErrQueueMismatch", err)
	}
	for _, want := range []string{fmt.Sprintf("queue %q already exists", q.Name), "drain and delete", "declare it as it is: queue_type=classic max_priority=10"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestLongestHoldQueueAccepted: the broker takes a hold queue whose TTL is
// the longest wait (runtime.MaxDeferral) and whose x-expires is twice that,
// and x-message-ttl and x-expires of 2^32-1 ms, the limit MaxDeferral is
// half of.
func TestLongestHoldQueueAccepted(t *testing.T) {
	const ttl = int64(runtime.MaxDeferral / time.Millisecond) // rounded down to whole ms
	if ttl != 2147483647 || 2*ttl > 1<<32-1 {
		t.Fatalf("MaxDeferral is %dms: want (2^32-1)/2 rounded down, 2147483647", ttl)
	}
	ch := rawChannel(t)
	name := queueName(t)
	_, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{
		"x-queue-type":              "classic",
		"x-message-ttl":             ttl,
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": name + ".work",
		"x-expires":                 2 * ttl,
	})
	if err != nil {
		t.Fatalf("hold queue with x-message-ttl=%d x-expires=%d refused: %v", ttl, 2*ttl, err)
	}
	limit := queueName(t)
	if _, err := ch.QueueDeclare(limit, true, false, false, false, amqp.Table{"x-message-ttl": int64(1<<32 - 1), "x-expires": int64(1<<32 - 1)}); err != nil {
		t.Errorf("x-message-ttl and x-expires of 2^32-1 ms refused: %v", err)
	}

	// Through the backend: the longest deferral its granularity allows.
	b := dial(t, rabbitmq.Options{})
	longest := runtime.MaxDeferral.Truncate(time.Second)
	q, _ := jobQueue(t, b, fmt.Sprintf(".deferred.%d", longest.Milliseconds()))
	env := &runtime.Envelope{ID: "longest", Queue: q.Name, Kind: q.Kind, Attempt: 1, MaxAttempts: 1, EnqueuedAt: time.Now()}
	if err := b.Publish(ctxT(t), env, longest); err != nil {
		t.Errorf("wait of %v (MaxDeferral rounded down to the granularity): %v", longest, err)
	}
}

// TestCoarseGranularityRefusesLongRetryMax: with a granularity of an hour
// the longest wait is 596h, so a RetryMax that validates (up to 596h31m23s)
// but whose retries would round up past runtime.MaxDeferral is refused by
// Declare, naming the granularity, before anything is declared.
func TestCoarseGranularityRefusesLongRetryMax(t *testing.T) {
	b := dial(t, rabbitmq.Options{Granularity: time.Hour})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.RetryMax = 596*time.Hour + 30*time.Minute
	if err := q.Validate(); err != nil {
		t.Fatalf("RetryMax %v should validate: %v", q.RetryMax, err)
	}
	err := b.Declare(ctxT(t), q)
	if !errors.Is(err, runtime.ErrInvalidConfig) {
		t.Fatalf("Declare = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"RetryMax = 596h30m0s, want at most 596h0m0s", "Granularity = 1h0m0s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	requireNoQueues(t, q.Name, q.Name+".dead")
}

// TestDelayExchangeNotControlExchange: a queue whose delay exchange would
// be the exchange of pause notices is refused before anything is declared;
// bound to it, the queue would take every pause notice as a job.
func TestDelayExchangeNotControlExchange(t *testing.T) {
	b := dial(t, rabbitmq.Options{Delay: runtime.DelayPlugin, ProvisionedDelayExchange: true})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.DelayExchange = "queuey.control"
	err := b.Declare(ctxT(t), q)
	if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), "pause and resume notices") {
		t.Fatalf("Declare = %v, want ErrInvalidConfig naming the pause notices' exchange", err)
	}
	requireNoQueues(t, q.Name, q.Name+".dead")
}
