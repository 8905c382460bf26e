package adminapi

import "time"

// NotSeen stands in QueueStats counts that a backend cannot see; the
// stats' Missing says why.
const NotSeen = -1

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
// cannot see are NotSeen, and Missing says why.
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

// MessageCounts are a queue's cumulative message counters. Two readings
// some seconds apart give its rates: the difference over the interval.
type MessageCounts struct {
	// Published counts messages published onto the queue.
	Published uint64 `json:"published"`
	// Handled counts deliveries acked: jobs done, retried, deferred or
	// dead-lettered.
	Handled uint64 `json:"handled"`
}
