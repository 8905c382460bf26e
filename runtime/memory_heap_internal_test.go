package runtime

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMemHeapOrder checks that the ready heap hands out messages by
// priority, highest first, then by sequence, whatever order they were
// pushed in and however pushes and pops interleave.
func TestMemHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var h memHeap
		var want []*memMsg
		n := r.IntN(300)
		for i := range n {
			m := &memMsg{prio: uint8(r.IntN(4)), seq: uint64(r.IntN(1000)*1000 + i)}
			h.push(m)
			want = append(want, m)
			if r.IntN(4) == 0 {
				// Pop the first so far, as a dispatch between publishes does.
				first := slices.MinFunc(want, before)
				if got := h.pop(); got != first {
					t.Fatalf("round %d: popped prio %d seq %d, want prio %d seq %d", round, got.prio, got.seq, first.prio, first.seq)
				}
				want = slices.DeleteFunc(want, func(m *memMsg) bool { return m == first })
			}
		}
		slices.SortFunc(want, before)
		for i, w := range want {
			if h.Len() != len(want)-i {
				t.Fatalf("round %d: %d left, want %d", round, h.Len(), len(want)-i)
			}
			if got := h.pop(); got != w {
				t.Fatalf("round %d: pop %d: prio %d seq %d, want prio %d seq %d", round, i, got.prio, got.seq, w.prio, w.seq)
			}
		}
		if h.Len() != 0 {
			t.Fatalf("round %d: %d left after popping all", round, h.Len())
		}
	}
}

// before orders messages as the ready heap hands them out.
func before(a, b *memMsg) int {
	if a.prio != b.prio {
		return int(b.prio) - int(a.prio)
	}
	return int(a.seq) - int(b.seq)
}
