package rabbitmq

import (
	"fmt"
	"log/slog"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// QuorumPriorities reports whether the broker's quorum queues order by
// priority: RabbitMQ 4.x quorum queues have two levels built in, normal
// (0-4) and high (5 and above), so a deferral returns ahead of the backlog
// when the queue's max_priority is 5 or more. RabbitMQ 3.x quorum queues
// have none, and deferred jobs return FIFO. A quorum queue is never
// declared with x-max-priority: neither version accepts it.
func (b *Backend) QuorumPriorities() bool { return b.declares.version.QuorumPriorities() }

// warnPriorities warns, on each declare of quorum queue q, when its
// deferred jobs cannot return ahead of the backlog on a broker of version:
// prio is what topology.Work found.
func warnPriorities(log *slog.Logger, q runtime.QueueConfig, version topology.Version, prio topology.Priorities) {
	switch prio {
	case topology.PrioritiesNone:
		log.Warn("queuey: RabbitMQ 3.x quorum queues have no priorities: declared without x-max-priority, so deferred jobs return in FIFO order, not ahead of the backlog (RabbitMQ 4.x quorum queues have two levels)",
			"queue", q.Name, "max_priority", q.MaxPriority, "broker_version", version.String())
	case topology.PrioritiesTooLow:
		log.Warn(fmt.Sprintf("queuey: RabbitMQ 4.x quorum queues have two priority levels, normal (0-4) and high (%d and above); deferred jobs travel at max_priority, which is normal here, so they return in FIFO order, not ahead of the backlog: set max_priority to %d or more", topology.QuorumHighPriority, topology.QuorumHighPriority),
			"queue", q.Name, "max_priority", q.MaxPriority, "broker_version", version.String())
	}
}
