package clustertest

import (
	"slices"
	"sync"
	"time"
)

// Gaps records when something happened (a job handled, a publish
// confirmed) and finds the longest pause around a moment, such as a kill.
// It is safe for concurrent use.
type Gaps struct {
	mu    sync.Mutex
	marks []time.Time
}

// Mark records an event at t.
func (g *Gaps) Mark(t time.Time) {
	g.mu.Lock()
	g.marks = append(g.marks, t)
	g.mu.Unlock()
}

// Longest returns the longest stretch without events that overlaps
// [from, to]: between two consecutive events, from the last event before
// from to the first after it, or, when no event follows, up to to. It is
// zero when events never stop for longer than their spacing.
func (g *Gaps) Longest(from, to time.Time) time.Duration {
	g.mu.Lock()
	marks := slices.Clone(g.marks)
	g.mu.Unlock()
	slices.SortFunc(marks, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	prev := time.Time{}
	for _, m := range marks {
		if !prev.IsZero() && !m.Before(from) && !prev.After(to) {
			longest = max(longest, m.Sub(prev))
		}
		prev = m
	}
	if !prev.IsZero() && prev.Before(to) {
		start := prev
		if start.Before(from) {
			start = from
		}
		longest = max(longest, to.Sub(start))
	}
	return longest
}
