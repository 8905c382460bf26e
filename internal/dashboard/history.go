package dashboard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/adminq"
	"github.com/queuey/queuey/runtime"
)

// historyLength is how many samples the chart keeps: ten minutes at one
// sample every sampleEvery.
const historyLength = 300

// sampleEvery is the shortest time between two samples: however many pages
// refresh, the Admin is asked for every queue's stats at most this often.
const sampleEvery = 2 * time.Second

// queueRow is one queue of the overview.
type queueRow struct {
	admin.QueueStats
	Rates *Rates `json:"rates,omitempty"`
}

// snapshot is the state of every queue at one time.
type snapshot struct {
	Queues []queueRow `json:"queues"`
	// Notes say what could not be seen, one sentence each.
	Notes []string `json:"notes,omitempty"`
}

// sample is the state of all queues at one time, for the chart.
type sample struct {
	At time.Time `json:"at"`
	// Depth is the jobs not yet done: ready, in flight and waiting.
	Depth int `json:"depth"`
	// Dead is the dead letters.
	Dead int `json:"dead"`
	// Published and Handled are summed rates (jobs/s), meaningful when
	// Rates is set.
	Published float64 `json:"published"`
	Handled   float64 `json:"handled"`
	Rates     bool    `json:"rates"`
}

// history keeps the latest snapshot and a ring of samples. It asks the
// Admin only when its latest snapshot is older than sampleEvery, and one
// caller at a time.
type history struct {
	now  func() time.Time
	take func(context.Context) (snapshot, error)

	mu      sync.Mutex
	latest  *snapshot
	taken   time.Time
	samples []sample // oldest first, at most limit
	limit   int
}

func newHistory(limit int, now func() time.Time, take func(context.Context) (snapshot, error)) *history {
	return &history{now: now, take: take, limit: limit}
}

// get returns a snapshot no older than sampleEvery and the samples so far.
func (h *history) get(ctx context.Context) (snapshot, []sample, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latest == nil || h.now().Sub(h.taken) >= sampleEvery {
		snap, err := h.take(ctx)
		if err != nil {
			return snapshot{}, nil, err
		}
		h.latest, h.taken = &snap, h.now()
		h.add(summarize(h.taken, snap.Queues))
	}
	return *h.latest, append([]sample(nil), h.samples...), nil
}

func (h *history) add(s sample) {
	if len(h.samples) == h.limit {
		copy(h.samples, h.samples[1:])
		h.samples = h.samples[:h.limit-1]
	}
	h.samples = append(h.samples, s)
}

// summarize sums the stats of all queues, leaving out counts that are not
// known.
func summarize(at time.Time, qs []queueRow) sample {
	s := sample{At: at}
	for _, q := range qs {
		s.Depth += known(q.Ready) + known(q.Unacked) + known(q.Waiting)
		s.Dead += known(q.Dead)
		if q.Rates != nil {
			s.Rates = true
			s.Published += q.Rates.Published
			s.Handled += q.Rates.Handled
		}
	}
	return s
}

func known(n int) int { return max(n, 0) }

// takeSnapshot asks the Admin for every queue's stats, and the RateReader
// for their rates. What cannot be seen becomes a note; only a failure to
// see anything is an error.
func (s *Server) takeSnapshot(ctx context.Context) (snapshot, error) {
	var snap snapshot
	names, err := s.queueNames(ctx)
	if err != nil {
		if !errors.Is(err, admin.ErrCannotList) {
			return snap, err
		}
		snap.Notes = append(snap.Notes, err.Error())
	}
	queues := make([]admin.Queue, len(names))
	for i, n := range names {
		queues[i] = adminq.Of(s.config(n))
	}
	stats, err := s.admin.QueueStats(ctx, queues...)
	if errors.Is(err, runtime.ErrUnknownQueue) {
		stats, err = s.statsOneByOne(ctx, queues, &snap)
	}
	if err != nil {
		return snap, err
	}
	var rates map[string]Rates
	if s.opts.Rates != nil {
		if rates, err = s.opts.Rates.MessageRates(ctx); err != nil {
			snap.Notes = append(snap.Notes, err.Error())
		}
	}
	snap.Queues = make([]queueRow, len(stats))
	for i, st := range stats {
		snap.Queues[i].QueueStats = st
		if r, ok := rates[st.Queue]; ok {
			snap.Queues[i].Rates = &r
		}
	}
	return snap, nil
}

// statsOneByOne asks for each queue's stats on its own, leaving out the
// queues that were deleted since they were listed, which fail a call for
// all of them.
func (s *Server) statsOneByOne(ctx context.Context, queues []admin.Queue, snap *snapshot) ([]admin.QueueStats, error) {
	var out []admin.QueueStats
	gone := 0
	for _, q := range queues {
		st, err := s.admin.QueueStats(ctx, q)
		if errors.Is(err, runtime.ErrUnknownQueue) {
			gone++
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, st...)
	}
	if gone > 0 {
		snap.Notes = append(snap.Notes, countText(gone, "queue was", "queues were")+" deleted while the list was read, and left out.")
	}
	return out, nil
}

// queueNames returns the names of the queues the overview lists.
func (s *Server) queueNames(ctx context.Context) ([]string, error) {
	if !s.opts.OnlyConfigured {
		return s.admin.Queues(ctx)
	}
	names := make([]string, 0, len(s.opts.Configs))
	for _, c := range s.opts.Configs {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
