package rabbitmq_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// longName returns a queue name of n bytes unique to this run, deleted
// with its dead-letter queue and the given companions (suffixes) when t
// ends.
func longName(t *testing.T, n int, companions ...string) string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-rmq-test.long." + hex.EncodeToString(buf[:]) + "."
	name += strings.Repeat("x", n-len(name))
	t.Cleanup(func() {
		del := []string{name, name + ".dead"}
		for _, c := range companions {
			del = append(del, name+c)
		}
		deleteQueues(del...)
	})
	return name
}

// TestDerivedNamesMustFit: Declare refuses, before declaring anything, a
// queue whose longest derived name (its hold queues', with the backend's
// suffixes) exceeds an AMQP short string.
func TestDerivedNamesMustFit(t *testing.T) {
	b := dial(t, rabbitmq.Options{DeferredSuffix: ".deferred-for-later"})
	name := longName(t, runtime.MaxQueueNameLen) // 235 + ".deferred-for-later." + 10 digits = 265
	err := b.Declare(ctxT(t), runtime.DefaultQueueConfig(name))
	if !errors.Is(err, runtime.ErrInvalidConfig) {
		t.Fatalf("Declare of a queue whose hold queues cannot be named = %v, want ErrInvalidConfig", err)
	}
	for _, want := range []string{"hold queue", "265 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	requireNoQueues(t, name, name+".dead")
}

// TestLongestQueueName: a queue name of runtime.MaxQueueNameLen bytes is
// one the broker takes with everything named after it, with the backend's
// default options: the queue, its dead-letter queue, the hold queue of its
// longest wait (exactly 255 bytes) and its paused marker; one byte more
// is refused by validation, before anything is declared.
func TestLongestQueueName(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	longest := runtime.MaxDeferral.Truncate(time.Second)
	hold := fmt.Sprintf(".deferred.%d", longest.Milliseconds())
	q := runtime.DefaultQueueConfig(longName(t, runtime.MaxQueueNameLen, hold))
	q.Kind = runtime.KindOf[job]()
	if n := len(q.Name + hold); n != 255 {
		t.Fatalf("the longest hold queue name is %d bytes, want 255: MaxQueueNameLen leaves no room, or too much", n)
	}
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatalf("NewProducer of a %d-byte queue: %v", len(q.Name), err)
	}
	if _, err := runtime.Hooks(hooks.K).EnqueuePayload(ctxT(t), p, q, nil, runtime.WithDelay(longest)); err != nil {
		t.Errorf("a wait of %v in a hold queue named with 255 bytes: %v", longest, err)
	}
	if err := b.PauseQueue(ctxT(t), q.Name); err != nil {
		t.Errorf("PauseQueue: %v", err)
	}
	if err := b.ResumeQueue(ctxT(t), q.Name); err != nil {
		t.Errorf("ResumeQueue: %v", err)
	}

	tooLong := runtime.DefaultQueueConfig(longName(t, runtime.MaxQueueNameLen+1))
	err = b.Declare(ctxT(t), tooLong)
	if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), "at most 235 bytes") {
		t.Errorf("Declare of a %d-byte queue = %v, want ErrInvalidConfig saying at most 235 bytes", len(tooLong.Name), err)
	}
	requireNoQueues(t, tooLong.Name, tooLong.Name+".dead")
}

// TestDeclareRefusesHoldQueueNames: a work queue may not be named as a
// hold queue of another queue is ("q.retry.1000", with the backend's
// suffixes): once q waits that long, the two would be one broker queue.
// Nothing is declared; a name that only looks close is taken.
func TestDeclareRefusesHoldQueueNames(t *testing.T) {
	b := dial(t, rabbitmq.Options{RetrySuffix: ".again"})
	base := queueName(t, ".again.1000", ".again.1000.dead", ".deferred.20", ".deferred.20.dead", ".again.x", ".again.x.dead", ".again.0", ".again.0.dead")
	for _, tc := range []struct {
		suffix, says string
	}{
		{".again.1000", `the hold queue of queue "` + base + `" for its retry waits of 1s`},
		{".deferred.20", `the hold queue of queue "` + base + `" for its deferred waits of 20ms`},
	} {
		err := b.Declare(ctxT(t), runtime.DefaultQueueConfig(base+tc.suffix))
		if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Declare(%q) = %v; want ErrInvalidConfig saying %q", base+tc.suffix, err, tc.says)
		}
		requireNoQueues(t, base+tc.suffix, base+tc.suffix+".dead")
	}
	for _, suffix := range []string{".again.x", ".again.0"} {
		if err := b.Declare(ctxT(t), runtime.DefaultQueueConfig(base+suffix)); err != nil {
			t.Errorf("Declare(%q) = %v; want it declared: no hold queue has that name", base+suffix, err)
		}
	}
}
