package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// declaredQueues is how many queues BenchmarkDeclare declares afresh.
const declaredQueues = 500

// BenchmarkDeclare declares 500 queues that do not exist yet (each with its
// dead-letter queue, the annotation's defaults: classic, max_priority 10)
// through one NewProducer, as a fresh start of a worker or producer with
// that many queues does, and reports queues declared per second. The
// queues are deleted afterwards, outside the clock.
func BenchmarkDeclare(b *testing.B) {
	reportRate(b, "declare", declaredQueues, "queues/s", runDeclares)
}

func runDeclares(b *testing.B, prefix string) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	queues := make([]runtime.QueueConfig, declaredQueues)
	var names []string
	for i := range queues {
		queues[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%d", prefix, i))
		names = append(names, queues[i].Name, queues[i].Name+".dead")
	}
	defer brokertest.DeleteQueues(amqpURL(), names...)
	start := time.Now()
	if _, err := runtime.NewProducer(ctx, be, queues...); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
