// Package e2e runs one end-to-end job workload over RabbitMQ two ways:
// through queuey (generated-style Enqueue, EnqueueMany and Handle on the
// rabbitmq backend) and as the plain amqp091-go loop a user would write by
// hand with the same guarantees. Both time the same work: each side's
// consumer runs before the clock starts, and the clock stops when the last
// job is handled. A Meter measures the timed part: wall time, the
// process's CPU (getrusage), servers' CPU (/proc/<pid>/stat of named
// processes) and allocations.
//
// The plain loop: a durable classic queue; persistent bodies of
// PayloadSize bytes with a message id and a content type and no other
// headers; mandatory publishes with publisher confirms, a sliding window of
// deferred confirmations; one consumer with Qos(prefetch) that decodes and
// acks each delivery on its own.
//
// The benchmarks in package bench and the peers comparison in bench/peers
// (a module of its own) both run these.
package e2e
