package dashboard

import (
	"context"
	"errors"
	"fmt"

	"github.com/queuey/queuey/admin"
)

// laddersView is the overview's panel of delay ladders (delay=ladder): the
// waits on each ladder's levels and its unrouted waits, or why they
// could not be read.
type laddersView struct {
	Ladders  []admin.LadderStats
	Unrouted int
	Err      string
}

// laddersPanel reads the delay ladders for the overview; nil when the
// backend has none (the memory backend, or a broker where no ladder-mode
// queue was declared).
func (s *Server) laddersPanel(ctx context.Context) *laddersView {
	la, ok := s.admin.(admin.LadderAdmin)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, outboxTimeout)
	defer cancel()
	ls, err := la.Ladders(ctx)
	if err != nil && !errors.Is(err, admin.ErrCannotList) {
		s.opts.Logger.Error("queuey dashboard: read the delay ladders", "err", err)
		return &laddersView{Err: fmt.Sprintf("The delay ladders could not be read: %v", err)}
	}
	if len(ls) == 0 {
		return nil
	}
	v := &laddersView{Ladders: ls}
	for _, l := range ls {
		v.Unrouted += l.Unrouted
	}
	return v
}
