// Package queueytest helps test applications that enqueue and handle
// queuey jobs, over the in-memory backend: no broker, no fake of your own,
// no msgpack in your tests, and no sleeps.
//
// New returns a Backend that records every job enqueued through it. Give
// it to the code under test as its runtime.Backend, then assert on what
// was enqueued with RequireEnqueued, RequireManyEnqueued and
// RequireNotEnqueued: each decodes the jobs into their struct and returns
// them with the options they were enqueued with (ID, priority, delay,
// headers).
//
// Drain runs a worker until no job is ready or running on any queue it
// handles, and returns what became of each run: done, retried, deferred or
// dead-lettered. It does not wait for waits: a job retried, deferred or
// enqueued with a delay is held for at least a second, and Drain returns
// without it (the outcome of a retry or deferral says how long it waits).
package queueytest
