// Package rabbitmq is the RabbitMQ runtime.Backend, on amqp091-go.
//
// # Connections
//
// Dial opens two connections, one for publishing and one for consuming, as
// RabbitMQ recommends: a connection blocked by a resource alarm stops
// carrying acks too. Publishes are spread over a few confirm-mode channels
// (Options.PublishChannels); every subscription consumes on a channel of its
// own with basic.qos set to the queue's prefetch and manual acks. Queues are
// declared on a channel of their own, since a refused declare closes its
// channel.
//
// # Topology
//
// For a logical queue q:
//
//	q                    durable; x-max-priority = max_priority when > 0; x-queue-type
//	q.dead               durable: jobs out of attempts, permanent failures, poison
//	q.retry.{ttl_ms}     durable classic; x-message-ttl = ttl; dead-letters to ""/q; x-expires = 2×ttl
//	q.deferred.{ttl_ms}  same as q.retry.{ttl_ms}
//
// The suffixes are Options fields. Every wait (retry, deferral, delayed
// enqueue) goes to a hold queue whose queue-level TTL is the wait, rounded
// up to Options.Granularity (1s by default), so that every wait leaves in
// publish order and on time. A hold queue is declared right before each
// publish to it, which renews its x-expires lease; an idle one deletes
// itself. Hold queues are always classic, since a quorum queue's lease is
// not renewed by a redeclare. Waits above runtime.MaxDeferral after rounding
// are refused with runtime.ErrDelayTooLong, never clamped, and a wait onto a
// queue not declared through the backend in this process is
// runtime.ErrUnknownQueue: the broker drops a TTL expiry into a missing queue
// silently.
//
// A deferred job travels at its queue's max_priority, so it comes back ahead
// of what still waits on q (a consumer already holds up to prefetch jobs of
// the backlog). The envelope keeps the job's own priority, which a retry
// travels at.
//
// Declaring q over an existing queue with other arguments fails with
// ErrQueueMismatch, naming the queue and the two ways out: drain and delete
// it so it is declared again, or declare it as it was (for a queue without
// x-max-priority, max_priority=0: deferral still works but returns FIFO).
//
// # Quorum queues
//
// RabbitMQ 3.x quorum queues refuse x-max-priority. On a 3.x broker (read
// from the connection's server properties) a quorum queue is declared
// without it and a warning is logged: priorities and deferral ahead of the
// backlog are not available there, deferred jobs return FIFO. RabbitMQ 4.x
// quorum queues have priorities built in and get x-max-priority.
//
// # Guarantees
//
//   - Every publish (enqueue, retry, defer, dead-letter) is mandatory and
//     confirmed before it is reported successful. Many publishes are in
//     flight on a channel at once; a basic.return (which the broker sends
//     before that publish's basic.ack) is paired with exactly its publish by
//     message id, or by an x-queuey-publish-seq header when another publish
//     with the same id is in flight, and reported as ErrUnroutable.
//   - Retry, defer and dead-letter publish first and ack second, and do not
//     ack when the publish failed: a job is never lost, at worst delivered
//     again. A refused wait happens before anything is acked.
//   - A message that is not a valid envelope is moved to q.dead with an
//     x-queuey-dead-reason header and logged; it never ends or stalls a
//     consumer. With Options.NoDeadLetterQueues, it and every dead job are
//     rejected (requeue=false) instead, for a broker policy to route.
//   - A channel closed by the broker (404 NOT_FOUND, 406 PRECONDITION_FAILED)
//     is reported as an error naming what was done, and replaced.
//
// # Connection loss
//
// Unacked deliveries go back to their queues by the broker's rules, and a
// subscription whose channel died ends with an error, after which the
// runtime's worker subscribes again. A publish whose confirm never came is
// reported as failed (ErrNotConfirmed), never as a success; it may still
// have been stored, so a job can be delivered twice. Each connection is
// owned in one place and dialled again on the next use after it died.
// Automatic topology and consumer recovery (amqp091-go's Config.Recovery)
// is not used yet.
//
// # Delay modes
//
// runtime.DelayQueue (hold queues) is the default. runtime.DelayPlugin, the
// delayed-message-exchange plugin, is not implemented yet and is refused
// with ErrNotImplemented at declare time. When it comes, its publishes will
// be confirmed but not mandatory, since the plugin returns every mandatory
// publish; the exchange will be checked at declare time instead.
package rabbitmq
