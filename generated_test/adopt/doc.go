// Package adopt shows one queue name claimed by two job types of two
// packages, jobs.Mail and other.Invoice (both name=adopt.mail): a producer
// made with one package's queues refuses the other's jobs, and the queue's
// own jobs are handled as before.
package adopt
