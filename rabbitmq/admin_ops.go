package rabbitmq

import (
	"sync"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// ops is what operators read and change through the admin API: dead
// letters (read, re-driven, purged; admin_dead.go, admin_scan.go,
// admin_keep.go, admin_index.go), queues' stats and names
// (admin_stats.go), purges and deletes of queues (admin_queue.go), ready
// counts (admin_ready.go) and message counters (admin_counts.go). Backend's
// admin methods hand their calls to it.
type ops struct {
	life    lifetime
	opts    Options
	names   topology.Names
	conn    *connection // reads run on short-lived channels of the first consuming connection
	pub     *publisher
	decl    *declarer
	enc     encoder
	book    *queueBook
	api     *mgmtAPI
	pauses  *pauses          // a deleted queue's pause marker goes with it
	version topology.Version // the broker's: which delay ladders are split

	copyRead sync.Map  // dead-letter queues found not classic: read by copying (see isClassic)
	index    deadIndex // indexes of dead-letter queues (Options.DeadLetterIndex)
}
