// Package outbox enqueues jobs in the application's PostgreSQL
// transaction, so that a job reaches the broker if and only if the
// transaction commits: the transactional outbox pattern.
//
// Producer binds a runtime.Producer to a transaction: generated
// EnqueueX functions called with it insert the job into the
// queuey_outbox table in that transaction instead of publishing it. The
// job's ID is assigned at insert and returned as usual; it is a label
// (runtime.WithID's, or generated), which two rows may share. A Relay,
// running beside the workers or on its own (queuey outbox relay), moves
// committed rows to the real backend: it publishes each job, confirmed,
// with its ID kept, and deletes the row once the broker has it. Delivery
// is at least once: when a relay dies between the broker's confirm and
// its own commit, or its round's transaction fails after the publishes,
// the jobs of that one batch are published again, with the same IDs, so
// a duplicate is recognisable.
//
// No row holds back the others: a row the relay cannot publish is moved
// to queuey_outbox_dead with the reason in the round that reads it, and a
// job whose queue does not exist yet waits apart for another try, for
// Relay.MissingQueueGrace; one whose publish alone failed for now waits
// apart and is tried until it goes. ReadStats shows the backlog and the
// dead rows; ListDead, RetryDead and PurgeDead read, put back and delete
// dead rows; StatsReader serves the dashboard and otelqueuey.
//
// Migrate creates the two tables (queuey_outbox and queuey_outbox_dead)
// and the trigger that wakes relays, or brings an outbox made by an
// earlier version up to date; schema.sql in this package is the same
// schema, for applications that apply migrations with a tool of their
// own. docs/outbox.md is the guide.
package outbox
