package syncx

import (
	"slices"
	"testing"
)

// TestKeptUntilListened: events told before a listener comes are kept, up
// to the bound, and handed to it first, in order.
func TestKeptUntilListened(t *testing.T) {
	var n Notes[int]
	for e := range 3 {
		n.Tell(e, 2)
	}
	var got []int
	n.Listen(func(e int) { got = append(got, e) })
	n.Tell(7, 2)
	if want := []int{0, 1, 7}; !slices.Equal(got, want) {
		t.Errorf("listener got %v, want %v", got, want)
	}
}

// TestNoListenerKeepsNothing: once told that no listener will come, notes
// drop what they kept and keep nothing more, until a listener comes.
func TestNoListenerKeepsNothing(t *testing.T) {
	var n Notes[int]
	n.Tell(1, 10)
	n.Listen(nil)
	if len(n.pending) != 0 {
		t.Fatalf("%d events kept after Listen(nil), want 0", len(n.pending))
	}
	for e := range 5 {
		n.Tell(e, 10)
	}
	if len(n.pending) != 0 {
		t.Fatalf("%d events kept with no listener to come, want 0", len(n.pending))
	}
	var got []int
	n.Listen(func(e int) { got = append(got, e) })
	n.Tell(9, 10)
	if want := []int{9}; !slices.Equal(got, want) {
		t.Errorf("listener got %v, want %v", got, want)
	}
}
