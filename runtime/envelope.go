package runtime

import (
	"maps"
	"time"
)

// Envelope is a job as it travels through a backend: the msgpack payload of
// the typed job plus everything the runtime needs to run, retry, defer and
// dead-letter it.
type Envelope struct {
	// ID is the job's ID, set at enqueue (generated, or WithID's label,
	// which no backend makes unique: see CheckJobID) and kept across
	// retries and deferrals.
	ID string
	// Queue is the logical queue the job belongs to.
	Queue string
	// Kind is the Go type of the job as %T prints it (emails.SendEmail):
	// the Kind of the QueueConfig it was enqueued with.
	Kind string
	// Payload is the msgpack encoding of the job.
	Payload []byte
	// Attempt is the 1-based number of the run this envelope is for. A retry
	// increments it; a deferral does not.
	Attempt int
	// MaxAttempts is how many runs the job gets before it is dead-lettered.
	MaxAttempts int
	// Priority is the job's own priority, 0 for normal work. A deferred job
	// travels at its queue's maximum priority but keeps this value.
	Priority uint8
	// EnqueuedAt is when the job was first enqueued.
	EnqueuedAt time.Time
	// LastError is the error of the previous failed run, if any.
	LastError string
	// Headers are string headers carried with the job, such as trace
	// context. Names that start with ReservedHeaderPrefix are queuey's.
	Headers map[string]string
}

// ReservedHeaderPrefix starts the name of every job header queuey sets
// itself: HeaderTick, HeaderDeferrals, admin.HeaderRedrives,
// admin.HeaderRedrivenAt, and a backend's own (the RabbitMQ backend marks
// a job it publishes again after a redelivery with "queuey-redelivered").
// An enqueue with such a header is
// refused with ErrInvalidOption, before anything is published: queuey
// would read it as its own, or take it off.
const ReservedHeaderPrefix = "queuey-"

// Clone returns a deep copy of e, so that a backend holding the copy shares
// no memory with the caller.
func (e *Envelope) Clone() *Envelope {
	c := *e
	if e.Payload != nil {
		c.Payload = append([]byte(nil), e.Payload...)
	}
	if e.Headers != nil {
		c.Headers = maps.Clone(e.Headers)
	}
	return &c
}
