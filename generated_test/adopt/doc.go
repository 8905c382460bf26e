// Package adopt shows one queue name claimed by two job types of two
// packages, jobs.Mail and other.Invoice (both name=adopt.mail): a producer
// made with one package's queues refuses the other's jobs, and the queue's
// own jobs are handled as before.
//
// Package other lives under testdata, out of ./..., as a package of
// another module would be: queuey-gen run over both packages at once
// refuses the second name=adopt.mail with the position of the first, so
// the clash reaches run time only when the two are generated apart.
package adopt
