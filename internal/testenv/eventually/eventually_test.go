package eventually

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceCheckHolds(t *testing.T) {
	t.Parallel()
	var calls int
	err := Poll(10*time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollReturnsLastState(t *testing.T) {
	t.Parallel()
	var calls int
	start := time.Now()
	err := Poll(5*Tick, func() error {
		calls++
		return fmt.Errorf("call %d", calls)
	})
	if elapsed := time.Since(start); elapsed < 5*Tick {
		t.Errorf("Poll gave up after %v, before its timeout %v", elapsed, 5*Tick)
	}
	if want := fmt.Sprintf("call %d", calls); err == nil || err.Error() != want {
		t.Errorf("Poll = %v, want the last state %q", err, want)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	var calls int
	if !Wait(10*time.Second, func() bool { calls++; return calls == 2 }) || calls != 2 {
		t.Errorf("Wait gave up, or went on, at call %d; want true at the second", calls)
	}
	if Wait(2*Tick, func() bool { return false }) {
		t.Error("Wait reported true of a condition that never held")
	}
}

func TestPollChecksOnceWithoutTime(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	errFalse := errors.New("false")
	if err := Poll(0, func() error { calls.Add(1); return errFalse }); err != errFalse || calls.Load() != 1 {
		t.Errorf("Poll(0) = %v after %d calls, want the one check's error", err, calls.Load())
	}
}

// recorder is a testing.TB that records a Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestFailureSaysWhatAndLastState(t *testing.T) {
	t.Parallel()
	r := &recorder{TB: t}
	Nil(r, 2*Tick, func() error { return errors.New("3 of 5 settled") }, "jobs settle")
	if !strings.Contains(r.msg, "jobs settle") || !strings.Contains(r.msg, "3 of 5 settled") {
		t.Errorf("Nil failed with %q, want what was awaited and the last state", r.msg)
	}
	r = &recorder{TB: t}
	True(r, 2*Tick, func() bool { return false }, "the queue is empty")
	if !strings.Contains(r.msg, "the queue is empty") {
		t.Errorf("True failed with %q, want what was awaited", r.msg)
	}
	r = &recorder{TB: t}
	True(r, time.Second, func() bool { return true }, "at once")
	if r.msg != "" {
		t.Errorf("True failed with %q on a condition that holds", r.msg)
	}
}
