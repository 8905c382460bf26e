// Package rabbitmq is the RabbitMQ runtime.Backend, on amqp091-go.
//
// Dial connects to a broker, or to the first node of a cluster that answers
// among its url and Options.Nodes; the zero Options is the default. What
// the backend promises under faults and on a cluster is in
// docs/guarantees.md; how it holds waits (hold queues, the delayed-message
// plugin or the delay ladder, and the quorum queues' rungs of delays) is in
// docs/delays.md. This page describes how it does so.
//
// # Words
//
// A few words mean one thing each in this package, in names and comments:
//
//   - A wait is a job held back for a delay before it reaches its queue: a
//     retry, a deferral or a delayed enqueue. The waiter (wait.go) holds
//     waits, each through its queue's delayer: hold queues (wait_queue.go),
//     the delayed-message plugin's exchange (wait_plugin.go) or the delay
//     ladder (wait_ladder.go). Code that
//     blocks until something happens awaits it (awaitUnblocked).
//   - A hold queue holds the waits of one delay for one queue, and its TTL
//     dead-letters them back to that queue. Hold names nothing else: acks
//     kept off the wire while a consumer stops are stalled (acker.Acker.Stall).
//   - A ladder (delay=ladder) is the fixed set of queues and exchanges,
//     "queuey.ladder.<type>.<granularity>ms.*", that hold the waits of
//     every ladder-mode queue of one type, declared once per backend
//     (topology.Ladder). A wait's routing key is its delay in granularities,
//     one word per bit, then its queue's name; a queue binds the ladder's
//     delivery exchange by exactly those words.
//   - A level is one step of a ladder: level L is an exchange and a queue
//     whose TTL is 2^L granularities, dead-lettering to the level below. A
//     wait passes the levels of its delay's set bits. Not to be confused
//     with the rungs of quorum hold queues (topology.QuorumRung), which
//     round a wait up. On RabbitMQ 4.x each level of a quorum ladder has
//     a second queue for waits of high priority (topology.Ladder.Split).
//   - An expiry is a classic hold queue's x-expires, which every declare
//     of it renews (wait_declares.go).
//   - A lease is a runtime.Leaser's: the one message of a lease queue,
//     which its single active consumer owns (lease.go).
//   - A marker is the queue whose existence says that a queue is paused
//     (pause.go).
//   - A token is one place of a global limit (a Limit's or a Rate's), a
//     message in the limit's token queue; the ledger is the one message
//     that says how many were minted, and the mint lock the exclusive
//     queue whose holder alone changes them (limit.go, limit_names.go).
//     A permit is what a job holds while it runs: its key's lease and a
//     Limit token.
//
// Each component owns its state and has its files: connections (conn_),
// confirmed publishing (pub_), declares (decl_), waits (wait_), consuming
// and settling (sub_, and the coalescing of acks in internal/acker),
// pausing (pause), leases (lease), global limits (limit) and the
// operators' reads (admin_).
// Backend (backend.go) wires them.
//
// # Connections
//
// Dial opens two connections, one for publishing and one for consuming, as
// RabbitMQ recommends: a connection blocked by a resource alarm stops
// carrying acks too. Publishes are spread over a few confirm-mode channels
// (Options.PublishChannels), and plugin waits go over channels of their own;
// every subscription consumes on a channel of its own with basic.qos set to
// its prefetch and manual acks, and one more channel hears the notices of
// paused queues for all of them. When consumers outgrow one connection
// (half its negotiated channel_max, at most 1,000 each), more consuming
// connections are dialled, each redialled over the nodes on its own after a
// loss, so one worker can consume thousands of queues; one left with no
// channel for 5 seconds is closed, the first excepted. A backend that
// runs a queue with a global limit dials one more connection for it,
// whose channels hold its permits and mint its tokens. Queues are declared
// on channels of their own, since a refused declare closes its channel.
// One more connection, dialled only when a plugin-mode queue is declared,
// carries delay exchange declares: a broker without the plugin answers the
// declare of an unknown exchange type by closing the whole connection.
//
// The broker shows the connections by name, Options.ConnectionName ("queuey"
// by default) and a suffix: "queuey publish" (publishes and queue declares),
// "queuey consume" (subscriptions, and reads of dead letters; the further
// consuming connections are "queuey consume 2", "queuey consume 3", ...),
// "queuey topology" (delay exchange declares and bindings, plugin mode only)
// and "queuey limits" (global limits' permits and mints, only for a queue
// with a Limit or a Rate).
//
// A queue the broker refuses to let us consume (access refused, in
// exclusive use) is runtime.ErrCannotConsume, which Worker.Run returns; a
// queue deleted on the broker since it was declared is declared again
// before it is consumed.
//
// # Declaring
//
// For a logical queue q the backend declares q, its dead-letter queue
// q.dead (unless Options.NoDeadLetterQueues) and, as waits need them, hold
// queues q.retry.{ttl_ms} and q.deferred.{ttl_ms} or, in plugin mode, a
// delay exchange; the suffixes are Options fields. q dead-letters into
// q.dead through the default exchange (x-dead-letter-exchange "",
// x-dead-letter-routing-key q.dead), so the broker's own dead-lettering (a
// quorum queue's delivery limit) keeps the job. A q that exists without
// those arguments is kept as it is, and Declare logs one warning with the
// policy (rabbitmqctl set_policy) or the drain-and-delete that adds them;
// so is a classic q.dead or hold queue under a quorum q, never
// PRECONDITION_FAILED. A queue named as a hold queue of another is
// ("q.retry.1000", with the Options' suffixes) is refused with
// runtime.ErrInvalidConfig: it would be q's hold queue once q waits that
// long.
//
// On RabbitMQ 4.x, whose quorum queues have a delivery limit of 20 by
// default, a quorum q and its q.dead are declared with x-delivery-limit -1
// (no limit; never sent to 3.x, where -1 dead-letters on the first
// return), so the broker ends no job before max_attempts and drops no dead
// letter. A quorum queue that exists with a limit, or under a policy that
// sets one (read once through the management API), is kept as it is, and
// Declare logs one warning per queue with the limit and its fix.
//
// Declaring q over an existing queue with other arguments fails with
// runtime.ErrQueueMismatch, naming the queue and the two ways out: drain and
// delete it so it is declared again, or declare it as it is, with the
// setting that matches the argument the broker names: queue_type=<its
// type> for x-queue-type, max_priority=<its x-max-priority> for
// x-max-priority, or max_priority=0 (MaxPriority: runtime.NoPriority) for
// a queue without one.
//
// A quorum queue is never declared with x-max-priority, whatever the
// broker's version (read from the connection's server properties);
// Backend.QuorumPriorities reports whether its quorum queues order by
// priority.
//
// Declares go out pipelined: the declares waiting at a moment (a start
// over many queues, waits onto many new hold queues) are shared out over
// up to 64 channels, each sending its share without waiting and then one
// declare whose answer says that the broker took them all. A refusal
// among them is made again on its own, so the error names the queue it
// belongs to and the others are declared.
//
// Every publish to a classic hold queue is followed, on the same channel,
// by a passive declare of it, which renews the queue's expiry (x-expires):
// the broker handles the two in that order, so the expiry runs from just
// after the message entered the queue, however late the publish reached
// the broker. A queue gone before the publish returns it; one that expired
// between the two fails the declare; either way the wait declares the
// queue and publishes again. A quorum hold queue has no expiry and is
// declared once per process; a publish onto one deleted meanwhile comes
// back unroutable, and the wait then declares it and publishes once more.
//
// # Publishing and settling
//
// Many publishes are in flight on a channel at once. A basic.return (which
// the broker sends before that publish's basic.ack) is paired with exactly
// its publish by message id, or by an x-queuey-publish-seq header when
// another publish with the same id is in flight, and reported as
// ErrUnroutable. A publish whose caller stopped waiting keeps its place
// until its confirm comes, so that its return is never taken for another's.
// PublishBatch (runtime.EnqueueMany) puts a batch on one channel with up to
// 1,024 awaiting their confirms, writes its publishes to the socket 64 at a
// time, and reports each publish on its own.
//
// A publish with a field longer than an AMQP short string (255 bytes: a job
// ID, a kind, a queue or exchange name) is refused with ErrFieldTooLong before it reaches the
// wire, and so is one the broker would not take, with runtime.ErrTooLarge:
// a content header that does not fit in one frame of the connection's
// negotiated frame_max, or a body over Options.MaxMessageSize. Only that
// publish fails, in a batch too. A copy of a job already on the broker (a
// retry, a deferral, a dead letter, a redelivery, a re-drive) is made to
// fit rather than refused, which would leave the job to fail the same way
// again: a dead letter's last-error header is left out if need be (its body
// keeps the last error whole), then its reason header is cut, saying so;
// an invalid message's copy to q.dead drops the largest of its own headers
// until it fits, and its reason names them.
//
// Acks are coalesced: once every delivery up to tag n is done or otherwise
// settled, one basic.ack with multiple=true settles them all. A done
// delivery's ack is gathered with others for up to 2ms, or until half the
// prefetch is done. A nack or reject is on the wire before its tag counts
// as settled, so a multiple ack never covers a requeued or unsettled
// delivery; a done delivery behind a slow one is acked on its own after up
// to 7ms, and what is kept meanwhile is bounded by the prefetch.
// Subscription.Close and Backend.Close send every waiting ack before the
// channel closes. A second settle of one delivery is refused before it
// reaches the wire.
//
// A publishing or declaring channel closed by the broker (404 NOT_FOUND,
// 406 PRECONDITION_FAILED) is reported as an error naming what was done,
// and replaced on the next use. A subscription's channel is not replaced
// by the backend: the subscription ends with the error, and the runtime's
// worker subscribes again. With q.dead deleted, a dead job or an invalid
// message comes back unroutable; the backend owns q.dead, so it declares it
// again and publishes once more. An invalid message whose move still fails
// goes back to q only after a backoff (1s, doubling to 30s), never in a hot
// loop.
//
// # Connection loss
//
// A lost connection is dialled again over Dial's url and Options.Nodes on
// a goroutine of its own, one round in flight per connection; no lock is
// held while it waits on the network, and a caller waits for it only as
// long as its context allows. amqp091-go's own recovery (Config.Recovery)
// is not used: it redials only the URL the connection was opened with,
// after a fixed interval, and reopens channels and consumers behind their
// owners' backs, while this backend ties delivery tags and coalesced acks
// to one channel session and redeclares what it needs on use.
//
// A redelivery counts as an attempt. On a classic queue a delivery with the
// Redelivered flag is published again with its attempt raised and the job
// header queuey-redelivered (removed before the handler sees the headers),
// and the old copy is acked once that publish is confirmed, before any
// handler runs; on a quorum queue the attempt is the envelope's plus
// x-delivery-count. Either way the delivery reports itself as a redelivery
// (runtime.Redelivery). A delivery a worker stopping or pausing cleanly
// took and never started is released (runtime.Delivery.Release): a copy of
// the job goes back to the queue's tail, confirmed, and the delivery is
// acked, with no attempt counted.
//
// A broker that stops answering without closing anything holds no caller
// past its context: channel opens, declares and consumer set-up wait on the
// broker through their context. A stopping worker gives each consumer's
// cancel and channel close (runtime.ContextStopper) until its shutdown
// timeout is spent, so a broker busy with thousands of consumers stopping
// at once has all that time to answer, and one that answers nothing holds
// the worker no longer; only then is the connection's socket dropped, once
// for all the consumers on it, and what they fetched and did not settle
// goes back counted as a run. A message a consumer is moving as that time
// ends (a redelivery published again, poison on its way to the dead
// letters) finishes its confirmed publish first, for up to 2s more.
// Subscription.Stop and Close, which take no context, wait as long as
// runtime.DefaultShutdownTimeout. Closing the backend waits at most a
// second per connection.
//
// The broker does not tell its consumer_timeout over AMQP: Consume logs a
// warning, once per queue, when the queue's handler timeout is longer than
// its default (see docs/guarantees.md, Long jobs).
//
// # Operating: the admin API
//
// Backend implements the admin package's Inspector, DeadLetterAdmin,
// Pauser and ReadyCounter, which the queuey command and its dashboard are
// built on. AMQP 0-9-1 can neither peek nor list queues: dead letters are read by an
// exclusive consumer of the dead-letter queue that puts back what it
// leaves in place, and in-flight counts and the hold queues of other
// processes come from the management HTTP API (Options.ManagementURL),
// read only once its cluster name is found to be the AMQP connection's
// (CheckManagement). A hold queue is known by the arguments the API lists
// for it, never by its name alone. docs/operating.md says what each read
// costs and how it keeps the order.
//
// A backend with Options.DeadLetterIndex reads a classic dead-letter
// queue whole on its first deep read (a page after a cursor, a letter by
// ID) and keeps an index of it, which later deep reads use while no letter
// has left the queue since: every re-drive, purge or delete of dead
// letters, from any process, first publishes a notice to the control
// exchange that the indexing backend gets before each use, and the queue
// must still start with the same letter and hold at least as many.
//
// A dead-letter queue is known to be classic when a declare of it as a
// classic queue without arguments succeeds; the broker refuses that
// declare for a quorum queue (and logs the refusal, once per queue for a
// long-lived backend), and a queue refused is read as a quorum queue.
package rabbitmq
