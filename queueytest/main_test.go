package queueytest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines; msgpack/v5 keeps one per type it
// allocates through its value cache, by design.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/vmihailenco/msgpack/v5.cachedValue.func1"))
}
