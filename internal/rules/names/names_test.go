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
	} {
		if got := names.Queue(tc.name); got != tc.ok {
			t.Errorf("Queue(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
	if names.MaxQueue != 235 {
		t.Errorf("MaxQueue = %d, want 235: 255 less <name>.deferred.2147483647's 20 bytes", names.MaxQueue)
	}
}
