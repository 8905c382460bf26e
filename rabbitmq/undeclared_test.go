package rabbitmq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestUndeclaredProducerDelays: a producer that declares nothing, on a
// connection of its own (as in another process), enqueues with a delay onto
// a queue another backend declared: the job waits as the queue's config
// says and runs no earlier than its delay, and nothing of the queue is
// declared through the producer's backend. A delayed enqueue onto a queue
// that does not exist is ErrUnknownQueue naming it. Both delay modes, the
// plugin's where it is enabled.
func TestUndeclaredProducerDelays(t *testing.T) {
	for _, mode := range []runtime.DelayMode{runtime.DelayQueue, runtime.DelayPlugin} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == runtime.DelayPlugin {
				requirePlugin(t)
			}
			owner := dial(t, rabbitmq.Options{})
			q := runtime.DefaultQueueConfig(queueName(t))
			q.Kind, q.Delay = runtime.KindOf[job](), mode
			if _, err := runtime.NewProducer(ctxT(t), owner, q); err != nil {
				t.Fatal(err)
			}
			type ran struct {
				n  int
				at time.Time
			}
			runs := make(chan ran, 4)
			runWorker(t, owner, q, func(_ context.Context, j job) error {
				runs <- ran{j.N, time.Now()}
				return nil
			})

			other := dial(t, rabbitmq.Options{})
			p := runtime.NewProducerUndeclared(other)
			const delay = 2 * time.Second
			sent := time.Now()
			if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithDelay(delay)); err != nil {
				t.Fatalf("delayed enqueue through an undeclared producer onto a live queue: %v", err)
			}
			r := within(t, runs, "the delayed job")
			if r.n != 1 {
				t.Fatalf("ran job %d, want 1", r.n)
			}
			if early := delay - r.at.Sub(sent); early > brokertest.ClockSlack(delay) {
				t.Errorf("the job ran %v before its delay of %v", early, delay)
			}

			missing := q
			missing.Name += ".never-declared"
			_, err := runtime.Enqueue(ctxT(t), p, missing, job{N: 2}, runtime.WithDelay(delay))
			if !errors.Is(err, runtime.ErrUnknownQueue) || !strings.Contains(err.Error(), missing.Name) {
				t.Errorf("delayed enqueue onto a queue that does not exist = %v, want ErrUnknownQueue naming %q", err, missing.Name)
			}
		})
	}
}
