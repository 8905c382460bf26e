package runtime

import (
	"context"

	"github.com/queuey/queuey/internal/adminapi"
)

// Ladders returns no ladder: a MemoryBackend holds every wait on a timer
// in process, whatever the queue's delay mode, and has no delay ladder.
func (b *MemoryBackend) Ladders(ctx context.Context) ([]adminapi.LadderStats, error) {
	return []adminapi.LadderStats{}, ctx.Err()
}

// UnroutedWaits returns none: a MemoryBackend has no delay ladder, so no
// wait is ever unrouted.
func (b *MemoryBackend) UnroutedWaits(ctx context.Context, _ adminapi.UnroutedSelector) ([]adminapi.UnroutedWait, error) {
	return []adminapi.UnroutedWait{}, ctx.Err()
}

// RedriveUnrouted moves nothing: a MemoryBackend has no unrouted wait.
// Every queue sel names is in the result's Unmatched.
func (b *MemoryBackend) RedriveUnrouted(ctx context.Context, sel adminapi.UnroutedSelector, _ func(adminapi.UnroutedProgress)) (adminapi.UnroutedRedriveResult, error) {
	return adminapi.UnroutedRedriveResult{
		Moved: []adminapi.UnroutedWait{}, Stayed: []adminapi.UnroutedWait{},
		Unmatched: sel.Unmatched(nil),
	}, ctx.Err()
}
