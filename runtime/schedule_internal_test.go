package runtime

import (
	"testing"
	"time"
)

func TestTickID(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.FixedZone("CET", 3600))
	if got, want := tickID("reports.daily", at), "reports.daily@2026-11-30T06:00:00Z"; got != want {
		t.Errorf("tickID = %q, want %q", got, want)
	}
}

func TestLatestTick(t *testing.T) {
	t.Parallel()
	next, err := ParseSpec("@every 1s")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now   time.Duration // after base
		want  time.Duration // after base, when n > 0
		wantN int
	}{
		{now: 500 * time.Millisecond, wantN: 0},
		{now: time.Second, want: time.Second, wantN: 1},
		{now: 1500 * time.Millisecond, want: time.Second, wantN: 1},
		{now: 3500 * time.Millisecond, want: 3 * time.Second, wantN: 2},
		{now: 24 * time.Hour, want: 24 * time.Hour, wantN: 2},
	} {
		got, n := latest(next, base, base.Add(c.now))
		if n != c.wantN || n > 0 && !got.Equal(base.Add(c.want)) {
			t.Errorf("latest(last=base, now=base+%v) = %v, %d; want base+%v, %d", c.now, got, n, c.want, c.wantN)
		}
	}
}
