// Package migrate is a queue whose annotation the migrate tests declare
// otherwise on the broker first.
package migrate

//queuey:queue name=queuey-cli-test.migrate max_priority=8
type Job struct{ N int }
