// Package reasons holds the dead-letter reasons every backend gives alike,
// so that a dead letter reads the same whichever backend made it.
package reasons

import "fmt"

// Unsettled is the dead-letter reason of a job whose last delivery, its
// run number runs, was never settled (its worker crashed, a shutdown
// timeout left it, or its ack was lost) and that has no attempt left.
// Backends count such a redelivery as a new attempt, so that a job that
// crashes its worker ends in the dead letters instead of looping.
func Unsettled(runs, maxAttempts int) string {
	return fmt.Sprintf("delivered %d times without being settled (a worker crash, a shutdown timeout or a lost ack): out of attempts (max_attempts %d)", runs, maxAttempts)
}
