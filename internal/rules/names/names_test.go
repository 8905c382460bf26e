package names_test

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/rules/names"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"emails.send_email", true},
		{"A-z_0.9", true},
		{strings.Repeat("q", names.MaxQueue), true},
		{strings.Repeat("q", names.MaxQueue+1), false},
		{"", false},
		{"a b", false},
		{"a/b", false},
		{"envoyé", false},
		{"amq.q", false},
		{"queuey.ladder.classic.1000ms.00", false},
		{"queuey.ladders", true},
	} {
		if got := names.Queue(tc.name); got != tc.ok {
			t.Errorf("Queue(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
	if names.MaxQueue != 235 {
		t.Errorf("MaxQueue = %d, want 235: 255 less <name>.deferred.2147483647's 20 bytes", names.MaxQueue)
	}
}

func TestMaxLadderQueue(t *testing.T) {
	t.Parallel()
	if got := names.MaxLadderQueue(22); got != 211 {
		t.Errorf("MaxLadderQueue(22) = %d, want 211: 255 less 22 words of a bit and a dot", got)
	}
	if got := names.LadderKeyLen(strings.Repeat("q", names.MaxLadderQueue(31)), 31); got != names.MaxShortString {
		t.Errorf("LadderKeyLen of the longest name at 31 levels = %d, want %d", got, names.MaxShortString)
	}
}
