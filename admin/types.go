package admin

import (
	"cmp"
	"encoding/json"

	"github.com/queuey/queuey/internal/adminapi"
	"github.com/queuey/queuey/runtime"
)

// Queue is a logical queue whose statistics Inspector.QueueStats is asked
// for. Only Name is required. The other fields are the queue's
// configuration, as the application declares it (runtime.QueueConfig, or
// the queue's //queuey:queue annotation); a backend that cannot list hold
// queues (RabbitMQ without its management API) finds the queue's retry
// hold queues by them, and says what it could not count.
type Queue = adminapi.Queue

// QueueOf returns the Queue of q: its name, retry schedule, type and delay
// mode, as Inspector.QueueStats takes them. An empty q.Delay is taken as
// runtime.DefaultDelay of q's type (the ladder for a quorum queue), as a
// backend without a default mode of its own runs it.
func QueueOf(q runtime.QueueConfig) Queue {
	return Queue{
		Name:        q.Name,
		MaxAttempts: q.MaxAttempts,
		RetryBase:   q.RetryBase,
		RetryMax:    q.RetryMax,
		Quorum:      q.QueueType == runtime.QueueQuorum,
		PluginDelay: q.Delay == runtime.DelayPlugin,
		LadderDelay: cmp.Or(q.Delay, runtime.DefaultDelay(q.QueueType)) == runtime.DelayLadder,
	}
}

var (
	// ErrDeadLetterNotFound is returned when no dead letter has the ID
	// asked for.
	ErrDeadLetterNotFound = adminapi.ErrDeadLetterNotFound
	// ErrCannotList is wrapped by errors about what a backend cannot see,
	// such as hold queues made by other processes when the RabbitMQ
	// management API is not reachable.
	ErrCannotList = adminapi.ErrCannotList
	// ErrEmptySelector is returned by RedriveDeadLetters and
	// PurgeDeadLetters for a selector that selects nothing: say All, or
	// give IDs, a reason or a kind.
	ErrEmptySelector = adminapi.ErrEmptySelector
)

// DeadLetterInfo is a dead letter as operators see it: the envelope's
// fields, why the job is dead, and its payload decoded.
type DeadLetterInfo = adminapi.DeadLetterInfo

// DeadLetterPage asks for one page of dead letters, oldest first.
type DeadLetterPage = adminapi.DeadLetterPage

// Page sizes of DeadLetters.
const (
	DefaultDeadLetterLimit = adminapi.DefaultDeadLetterLimit
	MaxDeadLetterLimit     = adminapi.MaxDeadLetterLimit
)

// DeadLetterList is one page of dead letters.
type DeadLetterList = adminapi.DeadLetterList

// Cursor is the cursor of the letter with ID id at 1-based position pos
// among its queue's dead letters: "pos:id".
func Cursor(pos int, id string) string {
	return adminapi.Cursor(pos, id)
}

// ParseCursor splits a DeadLetterPage.After into the position and ID of a
// cursor; a plain ID comes back with position 0 (unknown).
func ParseCursor(after string) (pos int, id string) {
	return adminapi.ParseCursor(after)
}

// PoisonID is the ID a poison letter without a message ID is known by:
// "raw-" and the first 12 hex digits of its body's SHA-256.
func PoisonID(body []byte) string {
	return adminapi.PoisonID(body)
}

// PayloadJSON decodes a msgpack payload, which carries its field names, and
// returns it as JSON. Binary strings become base64 strings, times RFC 3339
// strings, and map keys that are not strings their fmt form. The payload
// may come from anywhere: a malformed one is refused before anything is
// allocated for it.
func PayloadJSON(payload []byte) (json.RawMessage, error) {
	return adminapi.PayloadJSON(payload)
}

// DeleteResult is what QueueAdmin.DeleteQueue did.
type DeleteResult = adminapi.DeleteResult

// KeptQueue is a queue a delete left because it is not what its name
// suggests.
type KeptQueue = adminapi.KeptQueue

// DeleteQueueOptions says what QueueAdmin.DeleteQueue deletes besides the
// queue.
type DeleteQueueOptions = adminapi.DeleteQueueOptions

// DeletedQueue is one queue a delete removed, and how many jobs went with
// it.
type DeletedQueue = adminapi.DeletedQueue

// ErrQueueInUse is returned by QueueAdmin.DeleteQueue for a queue that
// consumers are attached to, unless told to force.
var ErrQueueInUse = adminapi.ErrQueueInUse

// Headers a re-drive sets on each job it puts back, among the envelope's
// own headers.
const (
	// HeaderRedrives counts how often the job was re-driven, in decimal.
	HeaderRedrives = adminapi.HeaderRedrives
	// HeaderRedrivenAt is when it was last re-driven, RFC 3339 in UTC.
	HeaderRedrivenAt = adminapi.HeaderRedrivenAt
)

// PoisonRefusal is the reason a re-drive gives for keeping a poison
// letter, in its RefusedLetter.
const PoisonRefusal = adminapi.PoisonRefusal

// DeadLetterSelector says which dead letters a re-drive or purge takes.
// The letters it takes are those with one of IDs, or, without IDs, every
// letter when All is set, or those whose reason contains Reason and whose
// kind is Kind (each when not empty).
type DeadLetterSelector = adminapi.DeadLetterSelector

// RedriveProgress is reported after each letter a re-drive moved or refused.
type RedriveProgress = adminapi.RedriveProgress

// RedriveResult is what a re-drive did.
type RedriveResult = adminapi.RedriveResult

// RefusedLetter is a dead letter a re-drive kept, and why.
type RefusedLetter = adminapi.RefusedLetter

// PurgeResult is what a purge did.
type PurgeResult = adminapi.PurgeResult

// NotSeen stands in QueueStats counts that a backend cannot see; the
// stats' Missing says why.
const NotSeen = adminapi.NotSeen

// HoldKind says what a hold queue holds.
type HoldKind = adminapi.HoldKind

// Hold kinds.
const (
	// HoldRetry holds jobs waiting for their next attempt.
	HoldRetry = adminapi.HoldRetry
	// HoldDeferred holds deferred jobs and delayed enqueues.
	HoldDeferred = adminapi.HoldDeferred
)

// QueueStats is what a logical queue holds at one moment. Counts a backend
// cannot see are NotSeen, and Missing says why.
type QueueStats = adminapi.QueueStats

// HoldStats is one hold of a queue's waits: a hold queue on RabbitMQ.
type HoldStats = adminapi.HoldStats

// MessageCounts are a queue's cumulative message counters. Two readings
// some seconds apart give its rates: the difference over the interval.
type MessageCounts = adminapi.MessageCounts

// LadderStats is one delay ladder (delay=ladder): the levels that hold the
// waits of every ladder-mode queue of one queue type and granularity, and
// its unrouted queue, which holds the waits whose queue was gone when they
// were due.
type LadderStats = adminapi.LadderStats

// UnroutedWait is a wait that left a delay ladder when its queue did not
// exist, and waits in the ladder's unrouted queue to be put back.
type UnroutedWait = adminapi.UnroutedWait

// UnroutedSelector says which unrouted waits a listing or a re-drive
// takes: those for one of Queues, each a queue's name or a prefix ending
// in "*" (orders.*), every one when Queues is empty; on the ladders named
// in Ladders (LadderStats.Name), every ladder when it is empty. Each
// ladder read costs reading its whole unrouted queue.
type UnroutedSelector = adminapi.UnroutedSelector

// UnroutedRedriveResult is what a re-drive of unrouted waits did.
type UnroutedRedriveResult = adminapi.UnroutedRedriveResult

// UnroutedProgress is reported after each wait a re-drive moved or left.
type UnroutedProgress = adminapi.UnroutedProgress
