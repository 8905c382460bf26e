// Package chans holds the one check of a done channel that the runtime and
// the RabbitMQ backend share.
package chans

// Closed reports whether c is closed, without waiting.
func Closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
