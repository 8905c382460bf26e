package dashboard

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// historyLength is how many samples the charts keep: ten minutes at one
// sample every sampleEvery.
const historyLength = 300

// sampleEvery is the time between two samples the server takes on its own,
// whether or not a page is open.
const sampleEvery = 2 * time.Second

// historySpan is the time the charts show.
const historySpan = historyLength * sampleEvery

// queueRates are message rates of one queue, in jobs per second, measured by the
// dashboard from two readings of its MessageCounts.
type queueRates struct {
	Published float64 `json:"published"`
	Handled   float64 `json:"handled"`
}

// queueRow is one queue of the overview.
type queueRow struct {
	admin.QueueStats
	// Kind is the kind of job the queue's configuration names, empty when
	// not known.
	Kind  string      `json:"kind,omitempty"`
	Rates *queueRates `json:"rates,omitempty"`
}

// snapshot is the state of every queue at one time.
type snapshot struct {
	Queues []queueRow `json:"queues"`
	// Notes say what could not be seen, one sentence each.
	Notes []string `json:"notes,omitempty"`
	// counts are the message counters read with the stats, by queue; nil
	// without a CountReader or when they could not be read.
	counts map[string]MessageCounts
}

// point is the state of one queue, or of all, in a sample.
type point struct {
	// Depth is the jobs not yet done: ready, in flight and waiting.
	Depth int `json:"depth"`
	// Dead is the dead letters.
	Dead int `json:"dead"`
	// Published and Handled are rates (jobs/s), meaningful when Rates is
	// set.
	Published float64 `json:"published"`
	Handled   float64 `json:"handled"`
	Rates     bool    `json:"rates"`
}

// sample is the state of all queues at one time, for the charts: their
// sum, and each queue's own.
type sample struct {
	At time.Time `json:"at"`
	point
	queues map[string]point
}

// rateWindow is the shortest time rates are measured over: longer than
// the management API's statistics interval (5 s by default), so that
// counters it updates in steps give even rates.
const rateWindow = 10 * time.Second

// reading is the message counters of all queues at one time.
type reading struct {
	at     time.Time
	counts map[string]MessageCounts
}

// history keeps the latest snapshot and a ring of samples, taken every
// interval by a goroutine from start until stop.
type history struct {
	now  func() time.Time
	take func(context.Context) (snapshot, error)

	// fresh serializes the snapshots pages ask for; current is the
	// latest of them, taken at currentAt.
	fresh     sync.Mutex
	current   *snapshot
	currentAt time.Time

	mu      sync.Mutex
	latest  *snapshot // of the latest sample
	taken   time.Time // when latest was taken
	samples []sample  // oldest first, at most limit
	limit   int
	added   chan struct{} // closed and replaced on every sample

	// readings are the counters of the latest samples, oldest first,
	// back to the one rates are measured from.
	readings []reading

	cancel context.CancelFunc
	done   chan struct{}
}

func newHistory(limit int, now func() time.Time, take func(context.Context) (snapshot, error)) *history {
	return &history{now: now, take: take, limit: limit, added: make(chan struct{})}
}

// start samples now and then every interval until stop.
func (h *history) start(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	go func() {
		defer close(h.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			h.sample(ctx, interval)
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// stop ends the sampling and waits for it; a second call does nothing.
func (h *history) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
}

// sample takes one snapshot, bounded by interval, and adds its sample.
func (h *history) sample(ctx context.Context, interval time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, max(interval, 10*time.Second))
	defer cancel()
	snap, err := h.take(ctx)
	if err != nil {
		return // the pages say why when asked
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.record(snap)
}

// record makes snap the latest and adds its sample, measuring rates from
// the counters of the newest earlier reading at least rateWindow old (or
// the oldest there is). Callers hold mu.
func (h *history) record(snap snapshot) {
	at := h.now()
	var prev *snapshot
	var since time.Duration
	base := -1
	for i, r := range h.readings {
		if base < 0 || at.Sub(r.at) >= rateWindow {
			base = i
		}
	}
	if base >= 0 {
		prev, since = &snapshot{counts: h.readings[base].counts}, at.Sub(h.readings[base].at)
		h.readings = h.readings[base:]
	}
	if snap.counts != nil {
		h.readings = append(h.readings, reading{at: at, counts: snap.counts})
	}
	for i, q := range snap.Queues {
		if r, ok := measure(prev, since, snap.counts, q.Queue); ok {
			snap.Queues[i].Rates = &r
		}
	}
	h.latest, h.taken = &snap, at
	h.add(summarize(at, snap.Queues))
	close(h.added)
	h.added = make(chan struct{})
}

// measure returns the rates of queue from the difference of its counters
// in prev and now over since. There are none without two readings, or when
// a counter went back (the queue was deleted and declared again).
func measure(prev *snapshot, since time.Duration, now map[string]MessageCounts, queue string) (queueRates, bool) {
	if prev == nil || since <= 0 {
		return queueRates{}, false
	}
	a, okA := prev.counts[queue]
	b, okB := now[queue]
	if !okA || !okB || b.Published < a.Published || b.Handled < a.Handled {
		return queueRates{}, false
	}
	secs := since.Seconds()
	return queueRates{
		Published: float64(b.Published-a.Published) / secs,
		Handled:   float64(b.Handled-a.Handled) / secs,
	}, true
}

// get returns a snapshot taken after it was called, with the rates of the
// latest sample, and the samples so far. Pages that ask at once share one
// snapshot: however many are open, the Admin is asked once at a time.
func (h *history) get(ctx context.Context) (snapshot, []sample, error) {
	asked := h.now()
	h.fresh.Lock()
	if h.current == nil || h.currentAt.Before(asked) {
		snap, err := h.take(ctx)
		if err != nil {
			h.fresh.Unlock()
			return snapshot{}, nil, err
		}
		h.current, h.currentAt = &snap, h.now()
	}
	snap := *h.current
	h.fresh.Unlock()
	snap.Queues = slices.Clone(snap.Queues)

	h.mu.Lock()
	defer h.mu.Unlock()
	if h.latest != nil {
		rates := map[string]*queueRates{}
		for _, q := range h.latest.Queues {
			rates[q.Queue] = q.Rates
		}
		for i, q := range snap.Queues {
			snap.Queues[i].Rates = rates[q.Queue]
		}
	}
	return snap, slices.Clone(h.samples), nil
}

// all returns the samples so far.
func (h *history) all() []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.samples)
}

// wait returns a channel closed when the next sample is added.
func (h *history) wait() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.added
}

func (h *history) add(s sample) {
	if len(h.samples) == h.limit {
		copy(h.samples, h.samples[1:])
		h.samples = h.samples[:h.limit-1]
	}
	h.samples = append(h.samples, s)
}

// summarize sums the stats of all queues, leaving out counts that are not
// known, and keeps each queue's own.
func summarize(at time.Time, qs []queueRow) sample {
	s := sample{At: at, queues: make(map[string]point, len(qs))}
	for _, q := range qs {
		p := point{
			Depth: known(q.Ready) + known(q.Unacked) + known(q.Waiting),
			Dead:  known(q.Dead),
		}
		if q.Rates != nil {
			p.Rates, p.Published, p.Handled = true, q.Rates.Published, q.Rates.Handled
		}
		s.queues[q.Queue] = p
		s.Depth += p.Depth
		s.Dead += p.Dead
		if p.Rates {
			s.Rates = true
			s.Published += p.Published
			s.Handled += p.Handled
		}
	}
	return s
}

// of returns the samples of one queue, leaving out those taken while it
// was not listed.
func of(samples []sample, queue string) []sample {
	var out []sample
	for _, s := range samples {
		if p, ok := s.queues[queue]; ok {
			out = append(out, sample{At: s.At, point: p})
		}
	}
	return out
}

func known(n int) int { return max(n, 0) }

// takeSnapshot asks the Admin for every queue's stats, and the CountReader
// for their message counters. What cannot be seen becomes a note; only a failure to
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
		queues[i] = admin.QueueOf(s.config(n))
	}
	stats, err := s.admin.QueueStats(ctx, queues...)
	if errors.Is(err, runtime.ErrUnknownQueue) {
		stats, err = s.statsOneByOne(ctx, queues, &snap)
	}
	if err != nil {
		return snap, err
	}
	if s.opts.Counts != nil {
		if snap.counts, err = s.opts.Counts.MessageCounts(ctx); err != nil {
			snap.Notes = append(snap.Notes, err.Error())
		}
	}
	snap.Queues = make([]queueRow, len(stats))
	for i, st := range stats {
		snap.Queues[i].QueueStats = st
		snap.Queues[i].Kind = s.configs[st.Queue].Kind
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
