// Package annotations finds and validates the //queuey:queue directives of
// a Go package and resolves each into the runtime.QueueConfig of its job
// type.
//
// A directive is a line of the doc comment directly above a struct type
// declaration, alone or in a grouped type (...) declaration:
//
//	//queuey:queue prefetch=20 max_attempts=3 retry_base=2s
//	type SendEmail struct {
//		To string
//	}
//
// Keys, with their defaults and accepted values:
//
//	name          <package>.<snake_case(Type)>   [A-Za-z0-9._-]+, at most 235 bytes (200 with schedule)
//	prefetch      10                             1..65535
//	concurrency   = prefetch                     1..prefetch
//	max_priority  10                             0..255 (0 declares no priority)
//	max_attempts  5                              1..1000
//	retry_base    1s                             a Go duration above 0
//	retry_max     1h, or retry_base if longer    a Go duration from retry_base up to 596h31m23s (runtime.MaxDeferral in whole seconds)
//	timeout       none                           a Go duration above 0
//	queue_type    classic                        classic or quorum
//	delay         queue                          queue or plugin
//	schedule      none                           a cron spec ("0 6 * * *", "CRON_TZ=Europe/Berlin 0 6 * * 1-5"),
//	                                             a descriptor (@hourly, @daily, ...) or "@every <duration>"
//	                                             of whole seconds, at least 1s (runtime.ParseSpec)
//	missed        once (with schedule)           once or skip: what a schedule does with ticks it missed
//
// A value with spaces, such as a cron spec, is written in double quotes,
// with Go's string syntax: schedule="30 6 * * 1-5". With schedule, every
// worker that handles the job also enqueues a zero job at each tick, one
// worker at a time across every process (runtime.Periodic).
//
// Parsing never falls back to a default for something it cannot read: an
// unknown key (with a suggestion when one is close), a key without a value,
// a value out of range, a duplicate key, a directive that is not on a
// struct type and two jobs with one queue name are each an *Error that
// starts with file:line:col. So is a line meant as a directive but not
// written as one: //queuey: followed by a near miss of queue (//queuey:queues,
// //queuey:que), or by any other word on a type, and // queuey:queue with a
// space after the slashes, on a type or followed by keys. A comment that
// only mentions queuey, such as "// queuey: the job framework we use", is
// prose and is ignored. This package reads syntax only; the generator checks
// field types.
package annotations
