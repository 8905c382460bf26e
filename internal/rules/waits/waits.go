// Package waits holds the one rule for how long a job is held before it
// runs (a delayed enqueue, a retry, a deferral): every delay is rounded up
// to a granularity and refused above MaxDeferral, never clamped. runtime,
// its memory backend, the RabbitMQ backend and the annotations all round
// and bound waits here, so that what one accepts the others accept too.
// Package runtime exports DefaultGranularity, MaxDeferral and ErrTooLong
// (as ErrDelayTooLong) to applications.
package waits

import (
	"errors"
	"fmt"
	"math/bits"
	"time"
)

// DefaultGranularity is the default wait granularity: every delay is
// rounded up to a multiple of it, which bounds how many hold queues exist.
const DefaultGranularity = time.Second

// MaxDeferral is the longest wait a backend accepts, about 24.8 days:
// 2^32-1 ms halved, since a hold queue's x-expires is twice its TTL and an
// x-expires of 2^32-1 ms is what RabbitMQ is known to take (3.10.8 takes
// more). It is also within the delayed-message plugin's x-delay limit,
// 2^31-1 ms.
const MaxDeferral = (1<<32 - 1) * time.Millisecond / 2

// ErrTooLong is returned for a wait longer than MaxDeferral after rounding
// up to the backend's granularity.
var ErrTooLong = errors.New("queuey: delay too long")

// Longest returns the longest wait a backend of the given granularity
// (DefaultGranularity when zero or less) accepts: MaxDeferral rounded down
// to a multiple of the granularity, 596h31m23s at the default. Every delay
// up to it rounds up (Round, RoundAtLeastOne) to at most it; a delay above
// it is refused with ErrTooLong.
func Longest(granularity time.Duration) time.Duration {
	if granularity <= 0 {
		granularity = DefaultGranularity
	}
	return MaxDeferral / granularity * granularity
}

// Round rounds d up to a multiple of granularity (DefaultGranularity when
// zero or less) and refuses a result above MaxDeferral with ErrTooLong. A
// delay of zero or less stays zero.
func Round(d, granularity time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, nil
	}
	if granularity <= 0 {
		granularity = DefaultGranularity
	}
	if d > MaxDeferral {
		return 0, fmt.Errorf("%w: %v exceeds MaxDeferral (%v)", ErrTooLong, d, MaxDeferral)
	}
	r := (d + granularity - 1) / granularity * granularity
	if r > MaxDeferral {
		return 0, fmt.Errorf("%w: %v, rounded up to %v, exceeds MaxDeferral (%v)", ErrTooLong, d, r, MaxDeferral)
	}
	return r, nil
}

// RoundAtLeastOne is the wait of a retry or a deferral: d rounded up as
// Round does, but at least one granularity, so that a handler returning
// Defer(0) does not run its job again at once, ahead of the backlog, for
// ever.
func RoundAtLeastOne(d, granularity time.Duration) (time.Duration, error) {
	if granularity <= 0 {
		granularity = DefaultGranularity
	}
	return Round(max(d, granularity), granularity)
}

// Levels returns how many levels a delay ladder of the given granularity
// (DefaultGranularity when zero or less) has: enough binary digits for the
// longest wait in granularities (Longest), so that level L, holding for
// 2^L granularities, covers every wait the backend accepts. 22 at 1s, 31
// at 1ms.
func Levels(granularity time.Duration) int {
	if granularity <= 0 {
		granularity = DefaultGranularity
	}
	return bits.Len64(uint64(Longest(granularity) / granularity))
}
