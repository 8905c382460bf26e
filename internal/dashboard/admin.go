package dashboard

import (
	"context"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
)

// Admin is what the dashboard reads and changes: a backend's
// admin.Inspector and admin.DeadLetterAdmin. runtime.MemoryBackend and
// rabbitmq.Backend implement both.
type Admin interface {
	admin.Inspector
	admin.DeadLetterAdmin
}

// RateReader tells the message rates of queues, for the throughput chart.
// It is optional: without one the chart shows depth only.
// *rabbitmq.Backend is one, through the management API.
type RateReader interface {
	// MessageRates returns the rates of every queue it knows, by broker
	// queue name.
	MessageRates(ctx context.Context) (map[string]Rates, error)
}

// Rates are message rates of one queue, per second.
type Rates = rabbitmq.QueueRates

var _ RateReader = (*rabbitmq.Backend)(nil)
