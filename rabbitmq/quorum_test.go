package rabbitmq_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// warnings drains logs and returns the messages of its warnings.
func warnings(logs records) []string {
	var warned []string
	for len(logs) > 0 {
		if rec := <-logs; rec.Level == slog.LevelWarn {
			warned = append(warned, rec.Message)
		}
	}
	return warned
}

// TestQuorumKeepsClassicDeadQueue: a quorum queue whose dead-letter queue
// exists as a classic queue declares without
// PRECONDITION_FAILED, warns once with the migration steps, and still
// dead-letters into the classic queue.
func TestQuorumKeepsClassicDeadQueue(t *testing.T) {
	logs := make(records, 64)
	b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.QueueType, q.MaxPriority = runtime.KindOf[int](), runtime.QueueQuorum, runtime.NoPriority
	if _, err := rawChannel(t).QueueDeclare(q.Name+".dead", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatalf("declare over a classic dead-letter queue: %v", err)
	}
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatalf("second declare: %v", err)
	}
	warned := warnings(logs)
	if len(warned) != 1 || !strings.Contains(warned[0], "is a classic queue; it is kept") || !strings.Contains(warned[0], "To migrate") {
		t.Errorf("warned %q, want one warning with the migration steps", warned)
	}
	id, err := runtime.Enqueue(ctxT(t), p, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, b, q, func(context.Context, int) error { return runtime.Permanent(errors.New("no")) })
	if dl := deadLetters(t, b, q.Name, 1); dl[0].Poison || dl[0].ID != id {
		t.Fatalf("dead letter %+v, want job %s", dl[0], id)
	}
	if w := warnings(logs); len(w) != 0 {
		t.Errorf("warned again: %q", w)
	}
}
