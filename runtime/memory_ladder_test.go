package runtime_test

import (
	"context"
	"slices"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// TestMemoryBackendHasNoLadder: the memory backend says it has no ladder
// and no unrouted wait, and a re-drive naming a queue matches nothing.
func TestMemoryBackendHasNoLadder(t *testing.T) {
	b := runtime.NewMemoryBackend()
	defer b.Close()
	ctx := context.Background()
	ls, err := b.Ladders(ctx)
	if err != nil || ls == nil || len(ls) != 0 {
		t.Errorf("Ladders = %v, %v; want an empty list", ls, err)
	}
	ws, err := b.UnroutedWaits(ctx, admin.UnroutedSelector{})
	if err != nil || ws == nil || len(ws) != 0 {
		t.Errorf("UnroutedWaits = %v, %v; want an empty list", ws, err)
	}
	res, err := b.RedriveUnrouted(ctx, admin.UnroutedSelector{Queues: []string{"orders", "mail.*"}}, nil)
	if err != nil || len(res.Moved) != 0 || len(res.Stayed) != 0 || !slices.Equal(res.Unmatched, []string{"orders", "mail.*"}) {
		t.Errorf("RedriveUnrouted = %+v, %v; want nothing moved and both queues unmatched", res, err)
	}
}
