package syncx

// Closed reports whether c is closed, without waiting.
func Closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
