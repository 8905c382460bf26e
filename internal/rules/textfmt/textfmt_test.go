package textfmt

import (
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0:                                     "-",
		-time.Second:                          "-",
		1234567 * time.Nanosecond:             "1ms",
		999 * time.Millisecond:                "999ms",
		1499 * time.Millisecond:               "1s",
		90*time.Minute + 700*time.Millisecond: "1h30m1s",
	} {
		if got := Age(d); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
}
