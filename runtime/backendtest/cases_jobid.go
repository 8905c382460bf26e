package backendtest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// testJobIDRule: WithID of an ID the wire cannot carry (over 255 bytes,
// not UTF-8) is refused at enqueue with ErrInvalidOption naming the limit,
// before anything is stored, and a 255-byte ID, and one ID given to two
// jobs, are enqueued and run with the ID unchanged: an ID is a label, not
// a key.
func testJobIDRule(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for _, id := range []string{strings.Repeat("i", runtime.MaxJobIDLen+1), strings.Repeat("i", 300), "bad\xffutf8"} {
		_, err := runtime.Enqueue(ctx, h.p, h.q, job{}, runtime.WithID(id))
		if !errors.Is(err, runtime.ErrInvalidOption) {
			t.Errorf("Enqueue with a %d-byte ID = %v, want ErrInvalidOption", len(id), err)
		} else if len(id) > runtime.MaxJobIDLen && !strings.Contains(err.Error(), "over 255") {
			t.Errorf("Enqueue with a %d-byte ID: %v, want an error naming the limit of 255 bytes", len(id), err)
		}
	}
	longest := strings.Repeat("l", runtime.MaxJobIDLen)
	h.enqueue(job{N: 1}, runtime.WithID(longest))
	h.enqueue(job{N: 2}, runtime.WithID("twice"))
	h.enqueue(job{N: 3}, runtime.WithID("twice"))
	runs := make(chan runtime.Info, 8)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		return nil
	})
	got := map[string]int{}
	for range 3 {
		got[recv(t, runs, "a job").ID]++
	}
	if got[longest] != 1 || got["twice"] != 2 {
		t.Fatalf("ran %v, want the 255-byte ID once and %q twice", got, "twice")
	}
}
