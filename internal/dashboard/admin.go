package dashboard

import (
	"context"

	"github.com/queuey/queuey/admin"
)

// Admin is what the dashboard reads and changes: a backend's
// admin.Inspector and admin.DeadLetterAdmin. runtime.MemoryBackend and
// the RabbitMQ backend implement both. When it is an admin.Pauser too (both
// are), queue pages offer pause and resume.
type Admin interface {
	admin.Inspector
	admin.DeadLetterAdmin
}

// CountReader tells the cumulative message counters of queues, from which
// the dashboard measures throughput: the difference of two readings over
// the time between them. It is optional: without one the chart shows depth
// only. The RabbitMQ backend is one, through the management API.
type CountReader interface {
	// MessageCounts returns the counters of every queue it knows, by
	// broker queue name.
	MessageCounts(ctx context.Context) (map[string]MessageCounts, error)
}

// MessageCounts are cumulative message counters of one queue.
type MessageCounts = admin.MessageCounts
