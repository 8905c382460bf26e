package errs

import "fmt"

// Unsettled is the dead-letter reason of a job whose last delivery, its
// run number runs, was never settled (its worker crashed, a shutdown
// timeout left it, or its ack was lost) and that has no attempt left.
// Backends count such a redelivery as a new attempt, so that a job that
// crashes its worker ends in the dead letters instead of looping.
func Unsettled(runs, maxAttempts int) string {
	return fmt.Sprintf("delivered %d times without being settled (a worker crash, a shutdown timeout or a lost ack): out of attempts (max_attempts %d)", runs, maxAttempts)
}

// BrokerDeadLettered is the dead-letter reason of a job that the broker
// dead-lettered on its own, as its x-death header says: reason is the
// broker's ("delivery_limit", "rejected", "expired", "maxlen"), count how
// many times it did so from the queue.
func BrokerDeadLettered(reason string, count int64) string {
	times := ""
	if count > 1 {
		times = fmt.Sprintf(" (%d times)", count)
	}
	switch reason {
	case "delivery_limit":
		return "dead-lettered by the broker at the queue's delivery limit" + times + ": the job went back to the queue unsettled (worker crashes, connection drops, shutdowns) more often than the limit allows, whatever its attempts; lift the limit (x-delivery-limit -1 or a policy's delivery-limit -1 on RabbitMQ 4.x)"
	case "rejected":
		return "dead-lettered by the broker" + times + ": rejected without requeue by a consumer that was not a queuey worker"
	}
	return fmt.Sprintf("dead-lettered by the broker%s: x-death reason %s", times, reason)
}
