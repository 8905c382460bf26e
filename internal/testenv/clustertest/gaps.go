package clustertest

import (
	"slices"
	"sync"
	"time"
)

// Gaps records when something happened (a job handled, a publish
// confirmed) and finds the longest pause after a moment, such as a kill.
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

// LongestEnding returns the longest stretch between two consecutive
// events that ends after from and no later than to: the pause something
// that happened at from caused, when the next such thing happens at to.
// A pause that starts just before from counts; one that the thing at to
// causes does not. Time after the last event is not counted: a run that
// stops for good never settles, which its ledger shows.
func (g *Gaps) LongestEnding(from, to time.Time) time.Duration {
	return g.longest(func(_, end time.Time) bool { return end.After(from) && !end.After(to) })
}

// LongestWithin returns the longest stretch between two consecutive events
// that lies wholly inside [from, to]: how long pauses are when nothing is
// killed, from the start of a run to its first kill.
func (g *Gaps) LongestWithin(from, to time.Time) time.Duration {
	return g.longest(func(start, end time.Time) bool { return !start.Before(from) && !end.After(to) })
}

// longest returns the longest stretch between consecutive events that in
// says counts.
func (g *Gaps) longest(in func(start, end time.Time) bool) time.Duration {
	g.mu.Lock()
	marks := slices.Clone(g.marks)
	g.mu.Unlock()
	slices.SortFunc(marks, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	for i := 1; i < len(marks); i++ {
		if in(marks[i-1], marks[i]) {
			longest = max(longest, marks[i].Sub(marks[i-1]))
		}
	}
	return longest
}
