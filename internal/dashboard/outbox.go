package dashboard

import (
	"context"
	"fmt"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/textfmt"
)

// outboxTimeout bounds one read of the outbox for a page.
const outboxTimeout = 5 * time.Second

// outboxView is the overview's outbox panel (Options.Outbox): the
// outbox's backlog and dead rows, or why they could not be read.
type outboxView struct {
	Pending, Retrying, Dead int64
	Oldest                  string
	Queues                  []outboxQueueView
	Err                     string
}

// outboxQueueView is one queue's row of the panel.
type outboxQueueView struct {
	Queue, Kind             string
	Pending, Retrying, Dead int64
	Oldest, LastError       string
}

// outboxPanel reads the outbox for the overview; nil without one.
func (s *Server) outboxPanel(ctx context.Context) *outboxView {
	if s.opts.Outbox == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, outboxTimeout)
	defer cancel()
	st, err := s.opts.Outbox.OutboxStats(ctx)
	if err != nil {
		s.opts.Logger.Error("queuey dashboard: read the outbox", "err", err)
		return &outboxView{Err: fmt.Sprintf("The outbox could not be read: %v", err)}
	}
	return newOutboxView(st)
}

func newOutboxView(st admin.OutboxStats) *outboxView {
	v := &outboxView{Pending: st.Pending, Retrying: st.Retrying, Dead: st.Dead, Oldest: textfmt.Age(st.OldestAge)}
	for _, q := range st.Queues {
		v.Queues = append(v.Queues, outboxQueueView{
			Queue: q.Queue, Kind: q.Kind, Pending: q.Pending, Retrying: q.Retrying, Dead: q.Dead,
			Oldest: textfmt.Age(q.OldestAge), LastError: q.LastError,
		})
	}
	return v
}
