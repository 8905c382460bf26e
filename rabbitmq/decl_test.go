package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

func TestMismatchErrorSuggests(t *testing.T) {
	q := topology.Queue{Name: "q", Args: amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(10)}}
	for _, tc := range []struct {
		reason string
		dead   bool
		want   string
	}{
		{"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received the value '10' of type 'signedint' but current is none",
			false, "max_priority=0 (MaxPriority: runtime.NoPriority in a QueueConfig; deferral still works"},
		{"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received '10' but current is '3'",
			false, "max_priority=3"},
		{"PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received none but current is the value '3' of type 'signedint'",
			false, "max_priority=3"},
		{"PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/': received 'classic' but current is 'quorum'",
			false, "queue_type=quorum"},
		{"PRECONDITION_FAILED - inequivalent arg 'x-message-ttl' for queue 'q' in vhost '/': received none but current is the value '5' of type 'long'",
			false, "arguments it has (x-message-ttl=5)"},
		{"PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q.dead' in vhost '/': received none but current is 'quorum'",
			true, "NoDeadLetterQueues"},
		{"PRECONDITION_FAILED - something else", false, "declare it with the arguments it has"},
	} {
		err := mismatchError(q, &amqp.Error{Code: amqp.PreconditionFailed, Reason: tc.reason}, tc.dead)
		if !errors.Is(err, runtime.ErrQueueMismatch) {
			t.Errorf("%s: %v is not ErrQueueMismatch", tc.reason, err)
		}
		if !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("error %q does not carry the broker's reason %q", err, tc.reason)
		}
		for _, want := range []string{tc.want, "drain and delete", `"q"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
}

// TestMismatchQuorumOverClassic: declaring a quorum queue where a classic
// one with priorities exists makes the broker name x-max-priority (quorum
// queues never have it); the advice must be about the queue type.
func TestMismatchQuorumOverClassic(t *testing.T) {
	q := topology.Queue{Name: "q", Args: amqp.Table{"x-queue-type": "quorum"}}
	reason := "PRECONDITION_FAILED - inequivalent arg 'x-max-priority' for queue 'q' in vhost '/': received none but current is the value '10' of type 'signedint'"
	err := mismatchError(q, &amqp.Error{Code: amqp.PreconditionFailed, Reason: reason}, false)
	want := "or declare it as it is: queue_type=classic max_priority=10 (the existing queue has x-max-priority=10, so it is a classic queue, and a quorum queue cannot take its place)"
	if !errors.Is(err, runtime.ErrQueueMismatch) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error %q, want it to end %q", err, want)
	}
}

// cancellingBackend ends the context of the declares made through it
// as each begins: a declare cut short on its way to the broker.
type cancellingBackend struct {
	*Backend
	cancel context.CancelFunc
}

func (c cancellingBackend) Declare(ctx context.Context, q runtime.QueueConfig) error {
	c.cancel()
	return c.Backend.Declare(ctx, q)
}

// TestDeclareErrorNamesQueueOnce: a declare whose context ends says which
// queue it was declaring once, not once per layer it went through.
func TestDeclareErrorNamesQueueOnce(t *testing.T) {
	brokertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Dial(ctx, brokertest.URL(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	declareCtx, cut := context.WithCancel(ctx)
	q := runtime.DefaultQueueConfig(fmt.Sprintf("queuey-rmq-test.declare-once.%d", time.Now().UnixNano()))
	_, err = runtime.NewProducer(declareCtx, cancellingBackend{b, cut}, q)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("NewProducer = %v, want context.Canceled", err)
	}
	if n := strings.Count(err.Error(), q.Name); n != 1 {
		t.Errorf("error %q names the queue %d times, want once", err, n)
	}
}
