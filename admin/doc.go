// Package admin is the operators' view of a queuey backend: queue
// statistics, dead letters, re-drive, purge and pausing, for tools such as
// the queuey command and dashboards. Application code that enqueues and
// handles jobs does not need it.
//
// Each part is an optional capability that a backend may implement beside
// runtime.Backend, found with a type assertion: Inspector counts queues
// (QueueStats) and reads dead letters without removing them, oldest first,
// in pages chained by a cursor (DeadLetters, DeadLetter), each described
// as a DeadLetterInfo with its payload decoded to JSON; DeadLetterAdmin
// re-drives dead letters onto their queue with a fresh attempt count,
// publishing each before removing it, and purges them; Pauser pauses and
// resumes a queue for every worker; ReadyCounter counts a queue's ready
// jobs, for monitoring; QueueAdmin purges a queue's ready jobs and deletes
// a queue with its waits. runtime.MemoryBackend and rabbitmq.Backend
// implement all five. OutboxReader reads the backlog and dead rows of a
// transactional outbox; outbox.StatsReader makes one. LimitReader reads
// how far each queue's global limits (runtime.QueueConfig's Limit, Rate
// and LimitKey) are taken; runtime.MemoryBackend and rabbitmq.Backend
// implement it.
//
// Package runtime, whose memory backend implements them, imports no
// operators' package: the types of this API (QueueStats, DeadLetterInfo,
// the re-drive and purge results, their errors) are defined in an
// internal package below both, and named here by aliases; go doc on
// github.com/queuey/queuey/internal/adminapi shows their fields. Pauser,
// which workers watch, is runtime.Pauser.
package admin
