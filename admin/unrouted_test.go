package admin_test

import (
	"slices"
	"testing"

	"github.com/queuey/queuey/admin"
)

// TestUnroutedSelector: names select exactly, a trailing * selects by
// prefix, no name selects every queue; Unmatched names what took none of
// the queues seen; Ladders limits the ladders read.
func TestUnroutedSelector(t *testing.T) {
	s := admin.UnroutedSelector{Queues: []string{"orders", "mail.*", "gone"}}
	for q, want := range map[string]bool{"orders": true, "orders.v2": false, "mail.send": true, "mail": false, "x": false} {
		if got := s.Selects(q); got != want {
			t.Errorf("Selects(%q) = %v, want %v", q, got, want)
		}
	}
	if got := s.Unmatched(map[string]bool{"orders": true, "mail.send": true}); !slices.Equal(got, []string{"gone"}) {
		t.Errorf("Unmatched = %q, want [gone]", got)
	}
	if all := (admin.UnroutedSelector{}); !all.Selects("anything") || !all.ReadsLadder("queuey.ladder.classic.1000ms") || all.Unmatched(nil) != nil {
		t.Errorf("the empty selector does not take everything")
	}
	one := admin.UnroutedSelector{Ladders: []string{"queuey.ladder.quorum.1000ms"}}
	if one.ReadsLadder("queuey.ladder.classic.1000ms") || !one.ReadsLadder("queuey.ladder.quorum.1000ms") {
		t.Errorf("ReadsLadder does not keep to Ladders")
	}
	r := admin.UnroutedRedriveResult{Stayed: []admin.UnroutedWait{{Queue: "b"}, {Queue: "a"}, {Queue: "b"}}}
	if got := r.MissingQueues(); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("MissingQueues = %q, want [b a]", got)
	}
}
