// Package queueytest helps test applications that enqueue and handle
// queuey jobs, over the in-memory backend: no broker, no fake of your own,
// no msgpack in your tests, and no sleeps.
//
// New returns a Backend that records every job enqueued through it. Give
// it to the code under test as its runtime.Backend, then assert on what
// was enqueued with RequireEnqueued, RequireEnqueuedN and
// RequireNotEnqueued, naming the queue by its generated XJob, which
// carries the job type: each decodes the jobs into their struct, checks
// the options they were enqueued with (WithID, WithPriority, WithDelay,
// WithHeader) and returns them.
//
// Work runs one job through a worker's handler at a chosen attempt and
// returns what became of the run, with no backend.
//
// A Backend keeps its own Clock, which stands still until the test moves
// it: retries, deferrals, delayed enqueues and the ticks of schedules wait
// on it, not on real time. RunReady runs a worker until no job is ready or
// running on any queue it handles, without moving the clock, and returns
// what became of each run: done, retried, deferred or dead-lettered.
// Drain does the same, then moves the clock to the end of the next wait
// and runs again, until no wait is left: a job that fails five times,
// with hours between, reaches its dead letter in milliseconds. Move the
// clock yourself (b.Clock().Advance) to tick a schedule or to end a wait
// at exactly its time.
package queueytest
