package dashboard

import (
	"context"

	"github.com/queuey/queuey/runtime"
)

// Admin is what the dashboard reads and changes: a backend's Inspector and
// DeadLetterAdmin. runtime.MemoryBackend and rabbitmq.Backend implement
// both.
type Admin interface {
	runtime.Inspector
	runtime.DeadLetterAdmin
}

// RateReader tells the message rates of queues, for the throughput chart.
// It is optional: without one the chart shows depth only.
type RateReader interface {
	// MessageRates returns the rates of every queue it knows, by broker
	// queue name.
	MessageRates(ctx context.Context) (map[string]Rates, error)
}

// Rates are message rates of one queue, per second.
type Rates struct {
	// Published is the rate of messages published onto the queue.
	Published float64 `json:"published"`
	// Handled is the rate of deliveries acked.
	Handled float64 `json:"handled"`
}
