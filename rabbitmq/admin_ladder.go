package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var _ admin.LadderAdmin = (*Backend)(nil)

// Ladders returns the delay ladders on the broker, each with its waits
// and its unrouted waits counted by passive declares, exact at the moment
// of asking. They are found by their unrouted queues in the management
// API's listing, and the ladders of the backend's granularity are looked
// for besides; without the API, only those, and the error, wrapping
// admin.ErrCannotList, says so.
func (b *Backend) Ladders(ctx context.Context) ([]admin.LadderStats, error) {
	return b.ops.ladders(ctx)
}

// ladders is Backend.Ladders.
func (o *ops) ladders(ctx context.Context) ([]admin.LadderStats, error) {
	found, listErr := o.findLadders(ctx)
	p := &passive{life: o.life, conn: o.conn}
	defer p.close()
	var out []admin.LadderStats
	for _, l := range found {
		q, ok, err := p.declare(ctx, l.Unrouted())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted since it was listed, or not there at all
		}
		st := admin.LadderStats{
			Name: l.Prefix(), QueueType: string(l.Type), Granularity: l.Granularity, Levels: l.Levels,
			UnroutedQueue: l.Unrouted(), Unrouted: q.Messages,
		}
		for _, lq := range l.Queues(o.version) {
			if lq.Name == l.Unrouted() {
				continue
			}
			q, ok, err := p.declare(ctx, lq.Name)
			if err != nil {
				return nil, err
			}
			if ok {
				st.Waiting += q.Messages
			}
		}
		out = append(out, st)
	}
	return out, listErr
}

// findLadders returns the ladders whose unrouted queue the management API
// lists and those of the backend's granularity, sorted by name; without
// the API, only the latter, with an error wrapping admin.ErrCannotList.
func (o *ops) findLadders(ctx context.Context) ([]topology.Ladder, error) {
	// The ladders of the backend's granularity are looked for whatever
	// the listing says: it may lag the broker.
	byName := map[string]topology.Ladder{}
	for _, t := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		l := topology.NewLadder(t, o.opts.Granularity, o.version)
		byName[l.Prefix()] = l
	}
	qs, err := o.listQueues(ctx)
	if err != nil {
		err = fmt.Errorf("ladders: only those of granularity %v are looked for: %w", o.opts.Granularity, err)
	}
	for _, q := range qs {
		if !strings.HasPrefix(q.Name, names.LadderPrefix) {
			continue
		}
		if l, ok := topology.UnroutedLadder(q.Name, o.version); ok {
			byName[l.Prefix()] = l
		}
	}
	ls := make([]topology.Ladder, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		ls = append(ls, byName[n])
	}
	return ls, err
}

// scanUnrouted starts a scan of l's unrouted queue that reads every
// message in it. A letter kept of a quorum one is copied through the
// unrouted exchange, so that it keeps its routing key, which names its
// queue. The caller must close it.
func (o *ops) scanUnrouted(ctx context.Context, l topology.Ladder) (*deadScan, error) {
	if err := o.life.refuse(fmt.Sprintf("unrouted waits of %q", l.Unrouted())); err != nil {
		return nil, err
	}
	s := &deadScan{
		o: o, queue: l.Unrouted(), dead: l.Unrouted(), what: fmt.Sprintf("unrouted waits of %q", l.Unrouted()),
		qtype: l.Type, copyTo: l.Unrouted(),
		announced: true, // no index reads it
	}
	return s, s.start(ctx, 0)
}

// unroutedWait describes message m of l's unrouted queue.
func unroutedWait(l topology.Ladder, m *amqp.Delivery) admin.UnroutedWait {
	w := admin.UnroutedWait{ID: m.MessageId, Ladder: l.Prefix(), UnroutedAt: leftLadderAt(l, m.Headers)}
	w.Queue, _ = l.KeyQueue(m.RoutingKey)
	w.Delay, _ = l.KeyDelay(m.RoutingKey)
	env, err := codec.Decode(m)
	if err != nil {
		w.Poison = true
		if w.ID == "" {
			w.ID = admin.PoisonID(m.Body)
		}
		return w
	}
	w.ID, w.Kind, w.Attempt, w.EnqueuedAt = env.ID, env.Kind, env.Attempt, env.EnqueuedAt.UTC()
	return w
}

// leftLadderAt is when a wait with headers h left l's last level (level
// 0 dead-lettered it on expiry, the time of its x-death entry, to the
// second); zero when h does not say.
func leftLadderAt(l topology.Ladder, h amqp.Table) time.Time {
	deaths, _ := h["x-death"].([]any)
	for _, d := range deaths {
		e, ok := d.(amqp.Table)
		if !ok {
			continue
		}
		if q, _ := e["queue"].(string); q != l.Level(0) {
			continue
		}
		if t, ok := e["time"].(time.Time); ok {
			return t.UTC()
		}
	}
	return time.Time{}
}

// ladderHeaders are the headers the broker adds to a wait on its way
// down a ladder, or a scan adds to a letter it keeps: a re-drive takes
// them off, so that the job reaches its queue as it was published.
var ladderHeaders = []string{
	"x-death",
	"x-first-death-exchange", "x-first-death-queue", "x-first-death-reason",
	"x-last-death-exchange", "x-last-death-queue", "x-last-death-reason",
	"x-delivery-count", "x-acquired-count",
	headerKeptBy,
}

// redrivenWait is unrouted wait m as it is put back on its queue: its
// properties, headers and body, less ladderHeaders.
func redrivenWait(m *amqp.Delivery) amqp.Publishing {
	h := maps.Clone(m.Headers)
	if h == nil {
		h = amqp.Table{}
	}
	for _, k := range ladderHeaders {
		delete(h, k)
	}
	return republish(m, h)
}

// queueCheck tells whether queues exist, asking the broker once for each.
type queueCheck struct {
	p    *passive
	seen map[string]bool
}

func (c *queueCheck) exists(ctx context.Context, name string) (bool, error) {
	if name == "" {
		return false, nil
	}
	if ok, asked := c.seen[name]; asked {
		return ok, nil
	}
	_, ok, err := c.p.declare(ctx, name)
	if err != nil {
		return false, err
	}
	c.seen[name] = ok
	return ok, nil
}

// UnroutedWaits returns the unrouted waits sel selects, ladder by ladder,
// and leaves them in place: each unrouted queue is read as a dead-letter
// queue is (see the package doc on reading dead letters), whole, since
// any of its waits may be for a queue sel selects.
func (b *Backend) UnroutedWaits(ctx context.Context, sel admin.UnroutedSelector) ([]admin.UnroutedWait, error) {
	return b.ops.unroutedWaits(ctx, sel)
}

// unroutedWaits is Backend.UnroutedWaits.
func (o *ops) unroutedWaits(ctx context.Context, sel admin.UnroutedSelector) ([]admin.UnroutedWait, error) {
	ladders, listErr := o.ladders(ctx)
	if ladders == nil && listErr != nil && !errors.Is(listErr, admin.ErrCannotList) {
		return nil, listErr
	}
	check := &queueCheck{p: &passive{life: o.life, conn: o.conn}, seen: map[string]bool{}}
	defer check.p.close()
	out := []admin.UnroutedWait{}
	for _, st := range ladders {
		if !sel.ReadsLadder(st.Name) {
			continue
		}
		// Read even when counted empty: a quorum queue counts the
		// letters a scan that just ended kept only once it has let them go
		// (the scan waits for that).
		l, _ := topology.UnroutedLadder(st.UnroutedQueue, o.version)
		s, err := o.scanUnrouted(ctx, l)
		if errors.Is(err, runtime.ErrUnknownQueue) {
			continue // the ladder was deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		err = func() error {
			for {
				m, ok, err := s.next(ctx)
				if err != nil || !ok {
					return err
				}
				s.keep(m)
				w := unroutedWait(l, m)
				if !sel.Selects(w.Queue) {
					continue
				}
				if w.QueueExists, err = check.exists(ctx, w.Queue); err != nil {
					return err
				}
				out = append(out, w)
			}
		}()
		if err := errors.Join(err, s.close(ctx)); err != nil {
			return nil, err
		}
	}
	return out, listErr
}

// RedriveUnrouted puts the unrouted waits sel selects back on their
// queues, those that exist: each is published to its queue through the
// default exchange, mandatory, and confirmed before it is acked away from
// the unrouted queue, so a crash in between leaves it in both (a
// duplicate) and never in neither. The waits of a queue that does not
// exist, and those whose publish failed, stay where they were.
func (b *Backend) RedriveUnrouted(ctx context.Context, sel admin.UnroutedSelector, progress func(admin.UnroutedProgress)) (admin.UnroutedRedriveResult, error) {
	return b.ops.redriveUnrouted(ctx, sel, progress)
}

// redriveUnrouted is Backend.RedriveUnrouted.
func (o *ops) redriveUnrouted(ctx context.Context, sel admin.UnroutedSelector, progress func(admin.UnroutedProgress)) (admin.UnroutedRedriveResult, error) {
	res := admin.UnroutedRedriveResult{Moved: []admin.UnroutedWait{}, Stayed: []admin.UnroutedWait{}}
	ladders, listErr := o.ladders(ctx)
	if ladders == nil && listErr != nil && !errors.Is(listErr, admin.ErrCannotList) {
		return res, listErr
	}
	total := 0
	for _, st := range ladders {
		total += st.Unrouted
	}
	r := &unroutedRedrive{
		o: o, sel: sel, res: &res, progress: progress, total: total, batch: 1, seen: map[string]bool{},
		check: &queueCheck{p: &passive{life: o.life, conn: o.conn}, seen: map[string]bool{}},
	}
	defer r.check.p.close()
	for _, st := range ladders {
		if !sel.ReadsLadder(st.Name) {
			continue
		}
		// Read even when counted empty: a quorum queue counts the
		// letters a scan that just ended kept only once it has let them go
		// (the scan waits for that).
		l, _ := topology.UnroutedLadder(st.UnroutedQueue, o.version)
		s, err := o.scanUnrouted(ctx, l)
		if errors.Is(err, runtime.ErrUnknownQueue) {
			continue // the ladder was deleted since it was listed
		}
		if err != nil {
			res.Unmatched = sel.Unmatched(r.seen)
			return res, err
		}
		r.l, r.s = l, s
		err = r.run(ctx)
		if err := errors.Join(err, s.close(ctx)); err != nil {
			res.Unmatched = sel.Unmatched(r.seen)
			return res, err
		}
	}
	res.Unmatched = sel.Unmatched(r.seen)
	return res, listErr
}

// unroutedRedrive is one re-drive of unrouted waits, one ladder's
// unrouted queue after the other.
type unroutedRedrive struct {
	o        *ops
	l        topology.Ladder
	s        *deadScan
	sel      admin.UnroutedSelector
	res      *admin.UnroutedRedriveResult
	progress func(admin.UnroutedProgress)
	total    int
	check    *queueCheck
	seen     map[string]bool // queues of the waits selected
	batch    int
	tags     []uint64
	waits    []admin.UnroutedWait
	msgs     []outMsg
}

func (r *unroutedRedrive) run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("re-drive of unrouted waits stopped after %d moved: %w", len(r.res.Moved), err)
		}
		m, ok, err := r.s.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return r.flush(ctx)
		}
		w := unroutedWait(r.l, m)
		if !r.sel.Selects(w.Queue) {
			r.s.keep(m)
			continue
		}
		r.seen[w.Queue] = true
		exists, err := r.check.exists(ctx, w.Queue)
		if err != nil {
			r.s.keep(m)
			return err
		}
		if !exists {
			r.s.keep(m)
			r.res.Stayed = append(r.res.Stayed, w)
			r.report()
			continue
		}
		w.QueueExists = true
		r.tags, r.waits, r.msgs = append(r.tags, m.DeliveryTag), append(r.waits, w), append(r.msgs, outMsg{key: w.Queue, msg: redrivenWait(m)})
		if len(r.msgs) >= r.batch {
			if err := r.flush(ctx); err != nil {
				return err
			}
			r.batch = min(2*r.batch, redriveBatchMax)
		}
	}
}

// flush publishes the pending waits, waits for their confirms, and takes
// each confirmed one away from the unrouted queue. A wait returned
// because its queue was deleted meanwhile stays, in Stayed; another
// failure stops the re-drive, and the waits not confirmed stay, kept as
// the scan closes.
func (r *unroutedRedrive) flush(ctx context.Context) error {
	if len(r.msgs) == 0 {
		return nil
	}
	errs := r.o.pub.publishBatch(ctx, r.msgs)
	var (
		failed  error
		twice   []string // put back, and still unrouted: their take failed
		takeErr error
	)
	for i, err := range errs {
		w := r.waits[i]
		switch {
		case errors.Is(err, ErrUnroutable):
			r.s.keep(&amqp.Delivery{DeliveryTag: r.tags[i]})
			r.check.seen[w.Queue] = false
			w.QueueExists = false
			r.res.Stayed = append(r.res.Stayed, w)
			r.report()
			continue
		case err != nil:
			r.s.keep(&amqp.Delivery{DeliveryTag: r.tags[i]})
			if failed == nil {
				failed = err
			}
			continue
		}
		if takeErr == nil {
			takeErr = r.s.take(ctx, r.tags[i])
		}
		if takeErr != nil {
			// Once a take failed, the scan's channel is gone: every
			// wait of the batch put back stays unrouted too.
			twice = append(twice, fmt.Sprintf("%s (on %q)", w.ID, w.Queue))
			continue
		}
		r.res.Moved = append(r.res.Moved, w)
		r.report()
	}
	r.tags, r.waits, r.msgs = r.tags[:0], r.waits[:0], r.msgs[:0]
	if takeErr != nil {
		return fmt.Errorf("re-drive of unrouted waits: %d jobs were put back on their queues but are still unrouted too, so a re-drive again would run them twice: %s: %w", len(twice), strings.Join(twice, ", "), takeErr)
	}
	if failed != nil {
		return fmt.Errorf("re-drive of unrouted waits stopped after %d moved; the waits not moved stay unrouted: %w", len(r.res.Moved), failed)
	}
	return nil
}

func (r *unroutedRedrive) report() {
	if r.progress != nil {
		r.progress(admin.UnroutedProgress{Moved: len(r.res.Moved), Stayed: len(r.res.Stayed), Total: r.total})
	}
}
