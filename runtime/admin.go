package runtime

import (
	"context"
	"errors"
	"time"
)

// Inspector is implemented by backends that let operators look at queues
// and dead letters without changing them: the command line and a dashboard
// are built on it. It is an optional capability beside Backend.
type Inspector interface {
	// Queues returns the logical queues the backend can find, sorted by
	// name. A backend that cannot list what other processes made returns
	// what it knows and says what it could not see in an error wrapping
	// ErrCannotList, with the names it did find.
	Queues(ctx context.Context) ([]string, error)
	// QueueStats returns the statistics of each queue, in the order given.
	// Only Name is required of each config; a backend that cannot list hold
	// queues uses the retry schedule (MaxAttempts, RetryBase, RetryMax) of
	// a config that sets MaxAttempts to find its retry hold queues. A queue
	// that does not exist is ErrUnknownQueue, naming it, unless its dead
	// letters outlived it: then its stats count them and Missing says so.
	QueueStats(ctx context.Context, queues ...QueueConfig) ([]QueueStats, error)
	// DeadLetters returns a page of queue's dead letters, oldest first,
	// without removing any.
	DeadLetters(ctx context.Context, queue string, page DeadLetterPage) (DeadLetterList, error)
	// DeadLetter returns the dead letter of queue with job ID id, without
	// removing it, or an error wrapping ErrDeadLetterNotFound.
	DeadLetter(ctx context.Context, queue, id string) (DeadLetterInfo, error)
}

// DeadLetterAdmin is implemented by backends that can put dead letters back
// to work and delete them. It is an optional capability beside Backend.
type DeadLetterAdmin interface {
	// RedriveDeadLetters puts the dead letters of queue that sel selects
	// back on queue, each with a fresh attempt count (Attempt 1) and the
	// re-drive recorded in HeaderRedrives and HeaderRedrivenAt. Each is
	// published (and confirmed) before it is removed from the dead letters,
	// so an interruption at any point duplicates a job at worst and never
	// loses one. Poison letters (no valid envelope) are refused and kept,
	// each with its reason in the result. When queue no longer exists the
	// call fails with ErrUnknownQueue and every letter stays. progress, if
	// not nil, is called after each letter moved or refused. When ctx ends
	// midway, what was moved so far is reported with ctx's error.
	RedriveDeadLetters(ctx context.Context, queue string, sel DeadLetterSelector, progress func(RedriveProgress)) (RedriveResult, error)
	// PurgeDeadLetters deletes the dead letters of queue that sel selects
	// (poison letters included) and reports how many.
	PurgeDeadLetters(ctx context.Context, queue string, sel DeadLetterSelector) (PurgeResult, error)
}

var (
	// ErrDeadLetterNotFound is returned when no dead letter has the ID
	// asked for.
	ErrDeadLetterNotFound = errors.New("queuey: no such dead letter")
	// ErrCannotList is wrapped by errors about what a backend cannot see,
	// such as hold queues made by other processes when the RabbitMQ
	// management API is not reachable.
	ErrCannotList = errors.New("queuey: cannot list")
	// ErrEmptySelector is returned by RedriveDeadLetters and
	// PurgeDeadLetters for a selector that selects nothing: say All, or
	// give IDs, a reason or a kind.
	ErrEmptySelector = errors.New("queuey: empty dead-letter selector")
)

// Headers a re-drive sets on each job it puts back, among the envelope's
// own headers.
const (
	// HeaderRedrives counts how often the job was re-driven, in decimal.
	HeaderRedrives = "queuey-redrives"
	// HeaderRedrivenAt is when it was last re-driven, RFC 3339 in UTC.
	HeaderRedrivenAt = "queuey-redriven-at"
)

// Unknown stands in QueueStats counts that a backend cannot see; the
// stats' Missing says why.
const Unknown = -1

// HoldKind says what a hold queue holds.
type HoldKind string

// Hold kinds.
const (
	// HoldRetry holds jobs waiting for their next attempt.
	HoldRetry HoldKind = "retry"
	// HoldDeferred holds deferred jobs and delayed enqueues.
	HoldDeferred HoldKind = "deferred"
)

// QueueStats is what a logical queue holds at one moment. Counts a backend
// cannot see are Unknown, and Missing says why.
type QueueStats struct {
	// Queue is the logical queue.
	Queue string `json:"queue"`
	// Ready counts jobs waiting to be handed to a consumer.
	Ready int `json:"ready"`
	// Unacked counts jobs handed to consumers and not yet settled: in
	// flight.
	Unacked int `json:"unacked"`
	// Consumers counts the queue's consumers.
	Consumers int `json:"consumers"`
	// Paused is set while the queue is paused (see Pauser): its workers
	// take none of its jobs.
	Paused bool `json:"paused"`
	// Waiting counts jobs held in waits (retries, deferrals, delayed
	// enqueues): the sum of Holds' Jobs.
	Waiting int `json:"waiting"`
	// Holds are the hold queues (or timers) of the waits found.
	Holds []HoldStats `json:"holds"`
	// Dead counts dead letters.
	Dead int `json:"dead"`
	// Missing says, in one sentence each, what could not be seen and why.
	Missing []string `json:"missing,omitempty"`
}

// HoldStats is one hold of a queue's waits: a hold queue on RabbitMQ.
type HoldStats struct {
	// Name is the hold queue's name.
	Name string `json:"name"`
	// Kind says whether it holds retries or deferrals.
	Kind HoldKind `json:"kind"`
	// Delay is how long each job waits in it; zero when the waits of the
	// hold have different delays (the memory backend's timers).
	Delay time.Duration `json:"delay_ns"`
	// Jobs counts the jobs waiting in it.
	Jobs int `json:"jobs"`
	// NextReleaseBy is a time by which its first job is released, zero
	// when it holds none. The memory backend knows the exact time; on
	// RabbitMQ it is an upper bound, now plus the hold's delay, since a
	// job's entry time into a hold queue cannot be read without taking it.
	NextReleaseBy time.Time `json:"next_release_by,omitzero"`
}

// DeadLetterPage asks for one page of dead letters, oldest first.
type DeadLetterPage struct {
	// After is the previous page's DeadLetterList.Next, or the ID of the
	// letter to start after. Empty starts with the oldest. A cursor
	// carries the letter's position as well as its ID, which lets the
	// RabbitMQ backend read no further than it needs.
	After string
	// Limit is the most letters returned. Zero means DefaultDeadLetterLimit;
	// it is capped at MaxDeadLetterLimit.
	Limit int
}

// Page sizes of DeadLetters.
const (
	DefaultDeadLetterLimit = 50
	MaxDeadLetterLimit     = 100_000
)

// DeadLetterList is one page of dead letters.
type DeadLetterList struct {
	// Letters are the page's letters, oldest first.
	Letters []DeadLetterInfo `json:"letters"`
	// Next is the After of the next page (a cursor: see DeadLetterCursor),
	// empty on the last page.
	Next string `json:"next,omitempty"`
	// Total counts the queue's dead letters when the page was read.
	Total int `json:"total"`
}

// IDs returns the IDs of the page's letters, in order.
func (l DeadLetterList) IDs() []string {
	ids := make([]string, 0, len(l.Letters))
	for _, d := range l.Letters {
		ids = append(ids, d.ID)
	}
	return ids
}

// DeadLetterSelector says which dead letters a re-drive or purge takes.
// The letters it takes are those with one of IDs, or, without IDs, every
// letter when All is set, or those whose reason contains Reason and whose
// kind is Kind (each when not empty).
type DeadLetterSelector struct {
	All    bool
	IDs    []string
	Reason string
	Kind   string
}

// Empty reports whether s selects nothing.
func (s DeadLetterSelector) Empty() bool {
	return !s.All && len(s.IDs) == 0 && s.Reason == "" && s.Kind == ""
}

// RedriveProgress is reported after each letter a re-drive moved or refused.
type RedriveProgress struct {
	// Moved and Refused count the letters so far.
	Moved, Refused int
	// Total is how many dead letters the queue held when the re-drive
	// began: an upper bound of what it will look at.
	Total int
}

// RedriveResult is what a re-drive did.
type RedriveResult struct {
	// Moved are the IDs of the letters put back on the queue, in order.
	Moved []string `json:"moved"`
	// Refused are the letters selected but kept, each with why.
	Refused []RefusedLetter `json:"refused,omitempty"`
	// NotFound are the IDs asked for that no dead letter has.
	NotFound []string `json:"not_found,omitempty"`
}

// RefusedLetter is a dead letter a re-drive kept, and why.
type RefusedLetter struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// PurgeResult is what a purge did.
type PurgeResult struct {
	// Purged counts the letters deleted.
	Purged int `json:"purged"`
	// NotFound are the IDs asked for that no dead letter has.
	NotFound []string `json:"not_found,omitempty"`
}
