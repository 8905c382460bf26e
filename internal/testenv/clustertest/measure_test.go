package clustertest

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestLedgerTally(t *testing.T) {
	l := NewLedger()
	for _, id := range []string{"a", "b", "c", "d"} {
		l.Confirmed(id)
	}
	if !l.Handled("a") || l.Handled("a") {
		t.Error("Handled: first run not reported first, or second reported first")
	}
	l.Handled("b")
	l.Dead("c")
	l.Handled("x") // its confirm was lost with a connection
	got := l.Tally()
	if got.Confirmed != 4 || got.Handled != 3 || got.Dead != 1 || got.Duplicates != 1 || got.Unconfirmed != 1 || !slices.Equal(got.Lost, []string{"d"}) {
		t.Errorf("tally %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := l.WaitSettled(ctx); err == nil {
		t.Error("WaitSettled with d unsettled: no error")
	}
	go l.Handled("d")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if tally, err := l.WaitSettled(ctx2); err != nil || len(tally.Lost) != 0 {
		t.Errorf("WaitSettled = %v, %v", tally, err)
	}
}

func TestGapsLongest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var g Gaps
	for _, ms := range []int{0, 100, 200, 3000, 3100, 900, 1000} {
		g.Mark(at(ms))
	}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{1500, 3000, 2 * time.Second}, // 1000..3000 ends at 3000
		{1500, 2999, 0},               // and not before
		{0, 250, 100 * time.Millisecond},
		{150, 1000, 700 * time.Millisecond}, // 200..900; 100..200 ends after 150 too
		{3000, 5000, 100 * time.Millisecond},
		{3100, 5000, 0}, // nothing after 3100
	} {
		if got := g.LongestEnding(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("LongestEnding(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	for _, tc := range []struct {
		from, to int
		want     time.Duration
	}{
		{0, 2999, 700 * time.Millisecond}, // 1000..3000 ends after 2999
		{0, 3000, 2 * time.Second},
		{150, 5000, 2 * time.Second}, // 100..200 starts before 150
		{1500, 1600, 0},
	} {
		if got := g.LongestWithin(at(tc.from), at(tc.to)); got != tc.want {
			t.Errorf("LongestWithin(%d, %d) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
	var empty Gaps
	if got := empty.LongestEnding(t0, at(10)); got != 0 {
		t.Errorf("no marks: %v", got)
	}
}

func TestURLsAfter(t *testing.T) {
	if got, want := URLsAfter(2), []string{URL(3), URL(1)}; !slices.Equal(got, want) {
		t.Errorf("URLsAfter(2) = %v, want %v", got, want)
	}
	if got, want := URLsAfter(3), []string{URL(1), URL(2)}; !slices.Equal(got, want) {
		t.Errorf("URLsAfter(3) = %v, want %v", got, want)
	}
}
