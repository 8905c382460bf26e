// Package rabbitmq is the RabbitMQ runtime.Backend, on amqp091-go.
//
// # Connections
//
// Dial opens two connections, one for publishing and one for consuming, as
// RabbitMQ recommends: a connection blocked by a resource alarm stops
// carrying acks too. Publishes are spread over a few confirm-mode channels
// (Options.PublishChannels), and plugin waits go over channels of their own
// (see Delay modes); every subscription consumes on a channel of its own
// with basic.qos set to its prefetch and manual acks, and one more channel
// hears the notices of paused queues for all of them. When consumers
// outgrow one connection (half its negotiated channel_max, at most 1,000
// each), more consuming connections are dialled, each redialled
// over the nodes on its own after a loss, so one worker can consume
// thousands of queues. A queue the broker refuses to let us consume
// (access refused, in exclusive use) is runtime.ErrCannotConsume, which
// Worker.Run returns; a queue deleted on the broker since it was declared
// is declared again before it is consumed. Queues are declared on a
// channel of their own, since a refused declare closes its channel. One
// more connection, dialled only when a plugin-mode queue is declared,
// carries delay exchange declares (see Delay modes).
//
// The broker shows the connections by name, Options.ConnectionName ("queuey"
// by default) and a suffix: "queuey publish" (publishes and queue declares),
// "queuey consume" (subscriptions, and reads of dead letters; the further
// consuming connections are "queuey consume 2", "queuey consume 3", ...) and "queuey
// topology" (delay exchange declares and bindings, plugin mode only).
//
// # Topology
//
// For a logical queue q:
//
//	q                    durable; x-queue-type; x-max-priority = max_priority when > 0 on a classic queue;
//	                     dead-letters to ""/q.dead (see Connection loss)
//	q.dead               durable: jobs out of attempts, permanent failures, poison; quorum when q is
//	q.retry.{ttl_ms}     durable classic; x-message-ttl = ttl; dead-letters to ""/q;
//	                     x-expires = 2×ttl, and at least ttl + 1s
//	q.deferred.{ttl_ms}  same as q.retry.{ttl_ms}
//
// A quorum q has quorum hold queues instead (see Quorum queues).
//
// The suffixes are Options fields. In the default delay mode every wait
// (retry, deferral, delayed enqueue) goes to a hold queue whose queue-level TTL is the wait, rounded
// up to Options.Granularity (1s by default), so that every wait leaves in
// publish order and on time. Every publish to a classic hold queue follows
// a no-wait declare of it on the same channel, in one write: the broker
// handles the declare, which renews the queue's lease (x-expires), right
// before it takes the publish, so the lease runs from just before the
// message entered the queue, however late the publish reached the broker,
// and outlasts the message's TTL by a TTL or a second, whichever is longer.
// An idle classic hold queue deletes itself. A quorum hold queue has no
// lease and is declared once per process; a publish onto one deleted meanwhile
// comes back unroutable, and the wait then declares it and publishes once
// more. Waits above runtime.MaxDeferral after rounding
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
// Caveat of waits in classic hold queues: when a wait is due, the broker
// dead-letters it from the hold queue back to q, and that move is
// at-most-once inside the broker: it is not confirmed, so a node failing
// at that moment, or q missing (deleted behind the backend's back), loses
// the job, with nothing returned and nothing logged. Publishing into the
// hold queue is confirmed; the way out of it is not. Quorum hold queues
// move at least once (below).
//
// Declaring q over an existing queue with other arguments fails with
// runtime.ErrQueueMismatch, naming the queue
// and the two ways out: drain and delete it so it is declared again, or
// declare it as it is, with the setting that matches the argument the
// broker names: queue_type=<its type> for x-queue-type, max_priority=<its
// x-max-priority> for x-max-priority, or max_priority=0 (MaxPriority:
// runtime.NoPriority) for a queue without one (deferral still works then
// but returns FIFO).
//
// # Quorum queues
//
// A quorum q gets quorum hold queues and a quorum q.dead, replicated like
// q: hold queues with x-dead-letter-strategy=at-least-once and
// x-overflow=reject-publish (RabbitMQ 3.10+), so an expired wait leaves its
// hold queue only once q has it (it may arrive twice, never not at all),
// and a wait carries on when the node leading its hold queue dies. They
// have no x-expires: a quorum queue's lease is not renewed by a redeclare,
// and delete if-empty is refused (540, closing the connection), so nothing
// could clean them up without risking a waiting job. Their number is
// bounded instead: a quorum wait is rounded up past the granularity to a
// ladder, exact up to 8 granularities and then four rungs per doubling
// (10s, 12s, 14s, 16s, 20s, ...), never shorter than asked and at most a
// quarter plus a granularity longer, which makes at most 81 hold queues of
// each kind per queue at 1s granularity. A classic q.dead that exists
// already (declared by another program, or by hand) is kept and used, with
// a warning once, never PRECONDITION_FAILED.
//
// A quorum queue is never declared with x-max-priority, whatever the
// broker's version (read from the connection's server properties):
// RabbitMQ 3.x quorum queues refuse it, and 4.x quorum queues refuse it
// too, since their priorities are built in, two levels: normal (0-4) and
// high (5 and above). On 4.x a deferred job, which travels at max_priority,
// returns ahead of the backlog only when max_priority is 5 or more; with a
// max_priority of 1 to 4 it is a normal message and returns FIFO, and
// Declare logs a warning saying so. On 3.x priorities and deferral ahead of
// the backlog are not available on quorum queues: Declare logs a warning and
// deferred jobs return FIFO. Backend.QuorumPriorities reports which.
//
// # Guarantees
//
//   - Every publish (enqueue, retry, defer, dead-letter) is mandatory and
//     confirmed before it is reported successful; waits in plugin mode are
//     confirmed but not mandatory (see Delay modes). Many publishes are in
//     flight on a channel at once; a basic.return (which the broker sends
//     before that publish's basic.ack) is paired with exactly its publish by
//     message id, or by an x-queuey-publish-seq header when another publish
//     with the same id is in flight, and reported as ErrUnroutable. A
//     publish whose caller stopped waiting keeps its place until its
//     confirm comes, so that its return is never taken for another's.
//     PublishBatch (runtime.EnqueueMany) puts a batch on one channel with up
//     to 1,024 awaiting their confirms, writes its publishes to the socket
//     64 at a time, and reports each publish on its own.
//   - Acks are coalesced: once every delivery up to tag n is done or
//     otherwise settled, one basic.ack with multiple=true settles them all.
//     A done delivery's ack is gathered with others for up to 2ms, or until
//     half the prefetch is done. A nack or reject is on the wire before its
//     tag counts as settled, so a multiple ack never covers a requeued or
//     unsettled delivery; a done delivery behind a slow one is acked on its
//     own after up to 7ms (2ms gathering, then 5ms), and what is
//     kept meanwhile is bounded by the prefetch however long the slow one
//     runs. Subscription.Close and Backend.Close send every waiting ack
//     before the channel closes. A second settle of one delivery is refused.
//   - Retry, defer and dead-letter publish first and ack second, and do not
//     ack when the publish failed: a job is never lost, at worst delivered
//     again. A refused wait happens before anything is acked.
//   - A message that is not a valid envelope is moved to q.dead with an
//     x-queuey-dead-reason header and logged; it never ends or stalls a
//     consumer. With Options.NoDeadLetterQueues, it and every dead job are
//     rejected (requeue=false) instead, for a broker policy to route.
//   - A publish with a field longer than an AMQP short string (255 bytes:
//     a job ID, a kind, a queue or exchange name) is refused with
//     ErrFieldTooLong, naming the field and its length, before it
//     reaches the wire: the client library would fail it half-written, and
//     the broker would close the publishing connection with every publish
//     in flight on it.
//   - So is a publish the broker would not take, with runtime.ErrTooLarge
//     naming the job, the queue, the size and the limit: a content header
//     (the properties and every header) that does not fit in one frame of
//     the connection's negotiated frame_max, which makes the broker close
//     the connection, or a body over Options.MaxMessageSize (the broker's
//     max_message_size, which it does not tell clients; zero means its
//     version's default), which makes it close the channel. Only that
//     publish fails, in a batch too.
//   - A copy of a job already on the broker (a retry, a deferral, a dead
//     letter, a redelivery, a re-drive) is made to fit in a frame rather
//     than refused, which would leave the job to fail the same way again:
//     a dead letter's last error header is left out if need be (its body keeps the last error whole),
//     then its reason header is cut, saying so. An invalid message's copy
//     to q.dead drops the largest of its own headers until it fits, and
//     its reason names them.
//   - A publishing or declaring channel closed by the broker (404 NOT_FOUND,
//     406 PRECONDITION_FAILED) is reported as an error naming what was
//     done, and replaced on the next use. A subscription's channel is not
//     replaced by the backend: the subscription ends with the error, and
//     the runtime's worker subscribes again. A second settle of a delivery
//     (ack, requeue or reject) is refused before it reaches the wire.
//   - With q.dead deleted, a dead job or an invalid message comes back
//     unroutable; the backend owns q.dead, so it declares it again and
//     publishes once more. An invalid message whose move still fails goes
//     back to q only after a backoff (1s, doubling to 30s per consecutive
//     failure), never in a hot loop, and the failure is logged at a
//     limited rate. It keeps every header and property in q.dead, except
//     its expiration and user id, which move to headers.
//
// # Connection loss
//
// Each connection is dialled over Dial's url and then Options.Nodes, in
// order. After a loss it is dialled again, over all of them, starting with
// the node after the one it was on, so a client whose node died carries on
// through another: the first round goes at once, later rounds wait a
// jittered 25ms to 500ms that resets once a dial succeeds. One round is in
// flight per connection, on a goroutine of its own; no lock is held while it
// waits on the network, and a caller waits for it only as long as its
// context allows. Passwords are redacted in every log line and error.
//
// Unacked deliveries go back to their queues by the broker's rules, and a
// subscription whose channel died ends with an error, after which the
// runtime's worker subscribes again at once, even while handlers of the
// dead subscription still run (their jobs, which they can no longer
// settle, are delivered again). A publish whose confirm never
// came is reported as failed (ErrNotConfirmed), never as a success; it may
// still have been stored, so a job can be delivered twice.
//
// A redelivery counts as an attempt, so that a job that crashes its worker
// cannot loop: on a classic queue, a delivery with the Redelivered flag is
// published again with its attempt raised, and the old copy acked once
// that publish is confirmed, before any handler runs (if the ack is lost,
// both copies run: a duplicate); on a quorum queue the attempt is the
// envelope's plus x-delivery-count. The delivery that then reaches a
// handler reports itself as a redelivery (runtime.Redelivery), so the
// worker's observers are told OutcomeRedelivered; on a classic queue the
// copy published again carries the job header queuey-redelivered for that,
// which is removed before the handler sees the headers. Past max_attempts
// the job goes to q.dead with the reason "delivered N times without being
// settled". A
// delivery a consumer had prefetched but not started when its channel
// closed counts an attempt too; one a worker stopping or pausing cleanly
// took and never started does not (runtime.Delivery.Release: a copy of the
// job goes back to the queue's tail, confirmed, and the delivery is acked). q dead-letters into q.dead through the
// default exchange (x-dead-letter-exchange "", x-dead-letter-routing-key
// q.dead), unless Options.NoDeadLetterQueues is set, so that the broker's
// own dead-lettering (a quorum queue's delivery limit) keeps the job. A q
// that exists without these arguments (declared by another program, or by
// hand before queuey used it) cannot be changed: Declare keeps it as it is and logs one warning with the policy
// (rabbitmqctl set_policy) or the drain-and-delete that migrates it.
//
// While the broker blocks the publishing connection for a resource alarm
// (connection.blocked), a publish waits until the block ends or its context
// does, and then fails with ErrBlocked (wrapping ErrNotConfirmed too when it
// was already sent: the broker may store it once the alarm clears). The
// consuming connection is not blocked, so acks go on. Declares travel on
// the publishing connection and wait out a block too, bounded by their
// context.
//
// A broker that stops answering without closing anything holds no caller
// past its context: channel opens, declares and consumer set-up wait on the
// broker through their context, a consumer's cancel waits at most 250ms,
// and a consumer whose channel close gets no answer within 500ms drops its
// connection's socket; closing the backend waits at most a second per
// connection. A stalled connection is otherwise found dead by its
// heartbeat (10s: the client gives up on a broker it has heard nothing
// from for 14–15s).
//
// amqp091-go's own recovery (Config.Recovery) is not used: it redials only
// the URL the connection was opened with, after a fixed interval (5s by
// default), and reopens channels and consumers behind their owners' backs,
// while this backend ties delivery tags and coalesced acks to one channel
// session and redeclares what it needs on use.
//
// # Long jobs and the broker's consumer_timeout
//
// RabbitMQ closes a channel whose delivery stays unacked longer than its
// consumer_timeout (30 minutes by default; rabbitmq.conf), and delivers the
// job again. A handler that runs longer can never settle its job: it runs
// again, counted as another attempt, until max_attempts dead-letters it.
// A job that may run that long needs the broker's consumer_timeout raised
// (rabbitmq.conf, or on RabbitMQ 3.12 and later the queue argument
// x-consumer-timeout set by a policy), or to be split into shorter jobs.
// The broker does not tell its setting over AMQP: Consume logs a warning,
// once per queue, when the queue's handler timeout is longer than the
// default. Either way the worker consumes again at once when the channel
// closes, so the queue keeps a consumer while the long run goes on.
//
// # Delay modes
//
// runtime.DelayQueue (hold queues, above) is the default. With
// runtime.DelayPlugin, on a queue (QueueConfig.Delay) or as the default of
// every queue that names none (Options.Delay), waits go to an
// x-delayed-message exchange of RabbitMQ's delayed-message-exchange plugin
// instead:
//
//	q.delay   durable; type x-delayed-message; x-delayed-type = direct; q bound with routing key q
//
// The exchange is QueueConfig.DelayExchange, else Options.DelayExchange
// (one exchange several queues share), else q.delay. A wait is published to
// it with routing key q and the delay in the x-delay header (milliseconds, a
// signed 32-bit value), and the plugin routes it to q when it is due. One
// exchange holds every delay, and a short wait is never held behind a long
// one. Everything else is as with hold queues: the delay is rounded up to
// Options.Granularity and refused above runtime.MaxDeferral, a deferral
// travels at the queue's max_priority and burns no attempt, a retry travels
// at the job's own priority with its attempt counted, and a wait onto a
// queue not declared here is runtime.ErrUnknownQueue.
//
// Plugin waits are confirmed but not mandatory: the plugin routes nothing at
// publish time, so it returns every mandatory publish. Declare checks
// instead that the exchange is there. It declares the exchange and binds q
// to it, on a connection of its own: a broker without the plugin answers
// the declare of an unknown exchange type by closing the whole connection,
// and the publishing and consuming connections must not go with it. That
// answer is reported as ErrPluginMissing, naming the queue and the command
// that enables the plugin (rabbitmq-plugins enable
// rabbitmq_delayed_message_exchange). With Options.ProvisionedDelayExchange
// the operator provisions the exchange: Declare checks with a passive
// declare that it exists (ErrDelayExchangeMissing when not) and binds q to
// it. A passive declare cannot tell an exchange's type, so a provisioned
// exchange of another type goes unnoticed and would route waits at once.
// Removing the binding while waits are held drops them when they are due,
// unnoticed, since the publishes were not mandatory. A wait to a delay
// exchange deleted after Declare fails with ErrDelayExchangeMissing naming
// it: the broker answers by closing the channel, so waits travel on
// channels of their own, and other publishes in flight are not hit.
//
// The plugin keeps delayed messages on the node that received them, one
// copy, not replicated, even for a quorum q, and it is not meant for
// hundreds of thousands of waiting messages. Only hold queues of a quorum
// q replicate waits.
//
// # Operating: the admin API
//
// Backend implements admin.Inspector, admin.DeadLetterAdmin, admin.Pauser
// and admin.ReadyCounter, which the queuey command is built on. AMQP 0-9-1 has no peek, so dead letters
// are read by an exclusive consumer of the dead-letter queue (two readers
// take turns), and what a read leaves in place stays there by a means that
// depends on the queue's type:
//
//   - A classic dead-letter queue: the reader holds what it reads unacked
//     and nacks it all back with requeue. RabbitMQ puts requeued messages
//     of a classic queue back at their original positions, and requeues a
//     dead reader's messages the same way, so reading removes nothing and
//     keeps the order. A page costs reading from the head to its last
//     letter; its cursor carries the position, so it reads no further.
//   - A quorum dead-letter queue counts every message given back to it
//     (nack, reject, or a closed channel's unacked messages) as a
//     delivery, and drops or dead-letters a message delivered more often
//     than its delivery limit: a delivery-limit policy, an x-delivery-limit
//     argument (when both are set, the lower applies), or RabbitMQ 4's
//     default of 20. So a read gives nothing back: each
//     letter it leaves in place is published again at the tail of the
//     queue (confirmed, mandatory, without the x-delivery-count and
//     x-acquired-count the broker adds, with the reader's consumer tag in
//     an x-queuey-kept-by header), and the original is acked once the copy
//     is confirmed. Every read, a page or one letter by ID, goes through
//     the whole queue, so that the letters end in the order they began.
//     Reading raises no letter's delivery count, whatever the limit, and
//     costs one copy of every letter in the queue (20,000 letters in 6.9s
//     on the busy two-core test machine). A letter that arrives while a
//     read runs can end up among older ones. A read whose context ends
//     midway copies what it holds and stops: the letters it got through
//     are then behind those it did not reach. A crash between a copy and
//     its ack leaves that letter twice. A copy that fails stops the read,
//     and the letters the read holds then go back, each counting a
//     delivery (one whose copy was sent but not confirmed may then be
//     there twice).
//
// A dead-letter queue is known to be classic when a declare of it as a
// classic queue without arguments succeeds; the broker refuses that
// declare for a quorum queue (and logs the refusal, once per queue for a
// long-lived backend), and a queue refused is read as a quorum queue.
// Re-driving publishes each letter (confirmed, mandatory) before acking it
// away, so a crash duplicates at worst.
//
// AMQP cannot list queues either: hold queues made by other processes and
// in-flight counts come from the management HTTP API
// (Options.ManagementURL; by default the broker's host on port 15672 with
// the same credentials). Without it, QueueStats reports in-flight counts as
// admin.NotSeen, finds retry hold queues from the queue's retry schedule
// (the admin.Queue it is asked about), and says in Missing that deferral
// hold queues cannot be seen.
package rabbitmq
