package waits_test

import (
	"errors"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/rules/waits"
)

func TestRound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, gran, want time.Duration
		tooLong        bool
	}{
		{0, 0, 0, false},
		{-time.Second, 0, 0, false},
		{time.Nanosecond, 0, time.Second, false},
		{time.Second, 0, time.Second, false},
		{1001 * time.Millisecond, 0, 2 * time.Second, false},
		{1500 * time.Millisecond, 100 * time.Millisecond, 1500 * time.Millisecond, false},
		{waits.MaxDeferral.Truncate(time.Second), 0, waits.MaxDeferral.Truncate(time.Second), false},
		{waits.MaxDeferral.Truncate(time.Second) + 1, 0, 0, true},
		{waits.MaxDeferral + 1, time.Millisecond, 0, true},
	}
	for _, c := range cases {
		got, err := waits.Round(c.in, c.gran)
		if c.tooLong {
			if !errors.Is(err, waits.ErrTooLong) {
				t.Errorf("Round(%v, %v) = %v, %v; want ErrTooLong", c.in, c.gran, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Round(%v, %v) = %v, %v; want %v", c.in, c.gran, got, err, c.want)
		}
	}
}

// TestLongestIsTheEdge: Longest is the longest wait RoundAtLeastOne
// accepts unchanged, at every granularity.
func TestLongestIsTheEdge(t *testing.T) {
	t.Parallel()
	for _, g := range []time.Duration{time.Millisecond, 7 * time.Millisecond, time.Second, time.Minute, time.Hour} {
		longest := waits.Longest(g)
		if got, err := waits.RoundAtLeastOne(longest, g); err != nil || got != longest {
			t.Errorf("RoundAtLeastOne(Longest(%v) = %v) = %v, %v; want it unchanged", g, longest, got, err)
		}
		if _, err := waits.RoundAtLeastOne(longest+time.Nanosecond, g); !errors.Is(err, waits.ErrTooLong) {
			t.Errorf("RoundAtLeastOne(Longest(%v)+1ns) = %v, want ErrTooLong", g, err)
		}
	}
}

// TestRoundAtLeastOne: a retry or deferral of zero or less waits one
// granularity.
func TestRoundAtLeastOne(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Second, 0, time.Nanosecond} {
		if got, err := waits.RoundAtLeastOne(d, 0); err != nil || got != waits.DefaultGranularity {
			t.Errorf("RoundAtLeastOne(%v, 0) = %v, %v; want %v", d, got, err, waits.DefaultGranularity)
		}
	}
}

func TestLevels(t *testing.T) {
	t.Parallel()
	for g, want := range map[time.Duration]int{time.Second: 22, 0: 22, time.Millisecond: 31, 10 * time.Millisecond: 28, time.Minute: 16} {
		if got := waits.Levels(g); got != want {
			t.Errorf("Levels(%v) = %d, want %d", g, got, want)
		}
	}
}
