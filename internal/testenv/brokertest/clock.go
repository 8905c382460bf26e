package brokertest

import "time"

// ClockSlack is how much sooner than its delay a wait the broker held may
// seem to end to a test's clock, without any wait ending early by the
// broker's: the broker's timers run on Erlang's clock, which, after the
// system clock steps forward (a virtual machine resumed, a clock synced),
// catches up with it at up to 1% faster than real time (Erlang's time
// correction), and counts in whole milliseconds. A wait that ends early
// by a rounding or a wrong hold would end a granularity early, far more.
func ClockSlack(delay time.Duration) time.Duration {
	return delay/100 + 5*time.Millisecond
}
