// Package eventually waits, in tests, for what happens in its own time: a
// job settled, a goroutine gone, a count reached. It polls a condition on a
// short ticker until the condition holds or a bound passes, and a test that
// gives up says what it waited for and the last state it saw. A test
// waits with it instead of sleeping and hoping, and instead of a loop of
// its own around time.Sleep.
package eventually

import (
	"errors"
	"testing"
	"time"
)

// Tick is how often a condition is polled.
const Tick = 20 * time.Millisecond

// errNotYet is the last state of a condition that says only false.
var errNotYet = errors.New("still false")

// Poll calls check at once and then every Tick until it returns nil, or
// until timeout has passed since Poll began; it returns nil when check
// did, and otherwise check's last error, which says the state it saw. A
// call of check that outlasts Tick is followed by the next at once.
func Poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(Tick)
	defer ticker.Stop()
	for {
		err := check()
		if err == nil || !time.Now().Before(deadline) {
			return err
		}
		<-ticker.C
	}
}

// Wait polls cond as Poll does until it returns true, and reports whether
// it did within timeout: for a test that says itself what it saw.
func Wait(timeout time.Duration, cond func() bool) bool {
	return Poll(timeout, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}) == nil
}

// Nil polls check as Poll does until it returns nil, and fails tb with
// what and check's last error when it has not within timeout.
func Nil(tb testing.TB, timeout time.Duration, check func() error, what string) {
	tb.Helper()
	if err := Poll(timeout, check); err != nil {
		tb.Fatalf("%s: not within %v: %v", what, timeout, err)
	}
}

// True polls cond as Poll does until it returns true, and fails tb with
// what when it has not within timeout.
func True(tb testing.TB, timeout time.Duration, cond func() bool, what string) {
	tb.Helper()
	if !Wait(timeout, cond) {
		tb.Fatalf("%s: not within %v", what, timeout)
	}
}
