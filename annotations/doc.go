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
// The keys, their defaults and the values each accepts are listed in
// docs/annotation.md. A value with spaces, such as a cron spec, is written
// in double quotes, with Go's string syntax: schedule="30 6 * * 1-5".
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
// field types, and that the field limit_key= names is one a limit key can
// be read from.
package annotations
