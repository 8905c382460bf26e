package adminapi

import (
	"slices"
	"strings"
	"time"
)

// LadderStats is one delay ladder (delay=ladder): the levels that hold the
// waits of every ladder-mode queue of one queue type and granularity, and
// its unrouted queue, which holds the waits whose queue was gone when they
// were due.
type LadderStats struct {
	// Name is the ladder's prefix, "queuey.ladder.<type>.<g>ms".
	Name string `json:"name"`
	// QueueType is the type of its queues: classic or quorum.
	QueueType string `json:"queue_type"`
	// Granularity is its unit of delay.
	Granularity time.Duration `json:"granularity_ns"`
	// Levels counts its levels.
	Levels int `json:"levels"`
	// Waiting counts the waits on its levels, of every queue at once:
	// they cannot be told apart by queue without taking them.
	Waiting int `json:"waiting"`
	// UnroutedQueue names the queue of its waits whose queue was gone.
	UnroutedQueue string `json:"unrouted_queue"`
	// Unrouted counts the waits in UnroutedQueue.
	Unrouted int `json:"unrouted"`
}

// UnroutedWait is a wait that left a delay ladder when its queue did not
// exist, and waits in the ladder's unrouted queue to be put back.
type UnroutedWait struct {
	// ID is the job's ID (the message ID).
	ID string `json:"id"`
	// Queue is the queue the wait was for.
	Queue string `json:"queue"`
	// QueueExists says whether Queue exists now: a re-drive puts the
	// wait back on it.
	QueueExists bool `json:"queue_exists"`
	// Ladder is the ladder's name (LadderStats.Name).
	Ladder string `json:"ladder"`
	// Delay is the wait's delay, as its routing key carries it.
	Delay time.Duration `json:"delay_ns"`
	// UnroutedAt is when it left the ladder's last level, with nowhere to
	// go: when it was due. Zero when the message does not say.
	UnroutedAt time.Time `json:"unrouted_at,omitzero"`
	// Kind, Attempt and EnqueuedAt are the job's, when the message is an
	// envelope.
	Kind       string    `json:"kind,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	EnqueuedAt time.Time `json:"enqueued_at,omitzero"`
	// Poison is set when the message is not a valid envelope; it is put
	// back as it is all the same, for its queue's worker to refuse.
	Poison bool `json:"poison,omitempty"`
}

// UnroutedSelector says which unrouted waits a listing or a re-drive
// takes: those for one of Queues, each a queue's name or a prefix ending
// in "*" (orders.*), every one when Queues is empty; on the ladders named
// in Ladders (LadderStats.Name), every ladder when it is empty. Each
// ladder read costs reading its whole unrouted queue.
type UnroutedSelector struct {
	Queues  []string
	Ladders []string
}

// ReadsLadder reports whether s reads the ladder named name.
func (s UnroutedSelector) ReadsLadder(name string) bool {
	return len(s.Ladders) == 0 || slices.Contains(s.Ladders, name)
}

// Selects reports whether s takes the waits of queue.
func (s UnroutedSelector) Selects(queue string) bool {
	if len(s.Queues) == 0 {
		return true
	}
	for _, q := range s.Queues {
		if p, ok := strings.CutSuffix(q, "*"); ok && strings.HasPrefix(queue, p) || q == queue {
			return true
		}
	}
	return false
}

// Unmatched returns the entries of s.Queues that take none of the queues
// in seen.
func (s UnroutedSelector) Unmatched(seen map[string]bool) []string {
	var out []string
	for _, q := range s.Queues {
		one := UnroutedSelector{Queues: []string{q}}
		found := false
		for name := range seen {
			if one.Selects(name) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, q)
		}
	}
	return out
}

// UnroutedRedriveResult is what a re-drive of unrouted waits did.
type UnroutedRedriveResult struct {
	// Moved are the waits put back on their queues, in order.
	Moved []UnroutedWait `json:"moved"`
	// Stayed are the waits selected whose queue still does not exist:
	// they stay unrouted.
	Stayed []UnroutedWait `json:"stayed"`
	// Unmatched are the entries of the selector's Queues that no unrouted
	// wait was for.
	Unmatched []string `json:"unmatched"`
}

// MissingQueues returns the queues of r.Stayed, each once, in order.
func (r UnroutedRedriveResult) MissingQueues() []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range r.Stayed {
		if !seen[w.Queue] {
			seen[w.Queue] = true
			out = append(out, w.Queue)
		}
	}
	return out
}

// UnroutedProgress is reported after each wait a re-drive moved or left.
type UnroutedProgress struct {
	Moved, Stayed int
	// Total is how many waits the unrouted queues held when the re-drive
	// began.
	Total int
}
