package rabbitmq

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// inspectQueue counts queue name with a passive declare on a channel of
// conn of its own.
func inspectQueue(ctx context.Context, life lifetime, conn *connection, name string) (amqp.Queue, bool, error) {
	p := &passive{life: life, conn: conn}
	defer p.close()
	return p.declare(ctx, name)
}

// passive counts queues with passive declares on one channel, opened
// again after a missing queue closes it.
type passive struct {
	life lifetime
	conn *connection
	ch   *amqp.Channel
}

func (p *passive) declare(ctx context.Context, name string) (amqp.Queue, bool, error) {
	if err := p.life.refuse(fmt.Sprintf("inspect queue %q", name)); err != nil {
		return amqp.Queue{}, false, err
	}
	if p.ch == nil {
		ch, err := p.conn.channel(ctx)
		if err != nil {
			return amqp.Queue{}, false, fmt.Errorf("inspect queue %q: %w", name, err)
		}
		p.ch = ch
	}
	q, err := p.ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		p.close() // the broker closed it
	}
	if isCode(err, amqp.NotFound) {
		return amqp.Queue{}, false, nil
	}
	if err != nil {
		return amqp.Queue{}, false, brokerError(fmt.Sprintf("inspect queue %q", name), err)
	}
	return q, true, nil
}

func (p *passive) close() {
	if p.ch != nil {
		_ = p.ch.Close()
		p.ch = nil
	}
}

// listQueues lists the broker's queues through the management API.
func (o *ops) listQueues(ctx context.Context) ([]mgmt.Queue, error) {
	c, err := o.api.client(ctx)
	if err != nil {
		return nil, err
	}
	qs, err := c.Queues(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", admin.ErrCannotList, err)
	}
	return qs, nil
}

// Queues returns the logical queues on the broker: those with queuey's
// topology beside them (a dead-letter queue or hold queues), found through
// the management API, and those declared through the backend. When the API cannot be
// reached it returns the declared ones with an error wrapping
// admin.ErrCannotList that says so.
func (b *Backend) Queues(ctx context.Context) ([]string, error) {
	return b.ops.listNames(ctx)
}

// listNames is Backend.Queues.
func (o *ops) listNames(ctx context.Context) ([]string, error) {
	names := map[string]bool{}
	for _, n := range o.book.names() {
		names[n] = true
	}
	qs, err := o.listQueues(ctx)
	if err != nil {
		return slices.Sorted(maps.Keys(names)), fmt.Errorf("queues: only those declared by this process are known: %w", err)
	}
	exists := map[string]bool{}
	for _, q := range qs {
		exists[q.Name] = true
	}
	for _, q := range qs {
		if base, ok := strings.CutSuffix(q.Name, o.opts.DeadSuffix); ok && base != "" {
			names[base] = true
		} else if h, ok, _ := o.names.IdentifyHold(q.Name, q.Type, q.Arguments); ok && exists[h.Queue] {
			names[h.Queue] = true
		}
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// QueueStats counts each queue. Ready, consumers and dead letters come
// from passive declares, exact at the moment of asking. Jobs in flight and
// hold queues come from the management API, whose counts lag by up to its
// statistics interval (5 s by default); the jobs in each hold queue found
// are then counted with a passive declare. Without the API, in-flight jobs
// are admin.NotSeen, retry hold queues are looked for by the names the
// queue's retry schedule (admin.Queue's MaxAttempts, RetryBase, RetryMax
// and Quorum) gives, and deferral hold queues (whose delays are chosen at
// run time) cannot be found: Missing says so.
//
// With the API, which queues exist (a dead-letter queue, a pause marker, a
// hold queue) is read from its list, which is current, and only those that
// exist are declared: a passive declare of a missing queue costs the
// broker a channel. The declares run on up to statsReaders channels at
// once.
func (b *Backend) QueueStats(ctx context.Context, queues ...admin.Queue) ([]admin.QueueStats, error) {
	return b.ops.stats(ctx, queues...)
}

// stats is Backend.QueueStats.
func (o *ops) stats(ctx context.Context, queues ...admin.Queue) ([]admin.QueueStats, error) {
	l := o.list(ctx)
	out := make([]admin.QueueStats, len(queues))
	readers := min(statsReaders, (len(queues)+statsPerReader-1)/statsPerReader)
	if readers <= 1 {
		p := &passive{life: o.life, conn: o.conn}
		defer p.close()
		for i, cfg := range queues {
			st, err := o.queueStats(ctx, p, cfg, l)
			if err != nil {
				return nil, err
			}
			out[i] = st
		}
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &passive{life: o.life, conn: o.conn}
			defer p.close()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(queues) || ctx.Err() != nil {
					return
				}
				st, err := o.queueStats(ctx, p, queues[i], l)
				if err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
				out[i] = st
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// statsReaders bounds the channels one QueueStats declares on at once;
// statsPerReader is the fewest queues worth a channel of their own.
const (
	statsReaders   = 8
	statsPerReader = 32
)

// list reads the management API's listing of the broker's queues, its
// hold queues known by their arguments; without the API, its err says why.
func (o *ops) list(ctx context.Context) listing {
	listed, err := o.listQueues(ctx)
	l := listing{byName: map[string]mgmt.Queue{}, holds: map[string][]holdRef{}, err: err}
	if err != nil {
		return l
	}
	for _, q := range listed {
		l.byName[q.Name] = q
		if h, ok, _ := o.names.IdentifyHold(q.Name, q.Type, q.Arguments); ok {
			l.holds[h.Queue] = append(l.holds[h.Queue], holdRef{q.Name, h})
		}
	}
	return l
}

// listing is what the management API listed for QueueStats: the queues by
// name and the hold queues of each logical queue (known by their
// arguments), or why there is no list.
type listing struct {
	byName map[string]mgmt.Queue
	holds  map[string][]holdRef
	err    error
}

// holdRef is one hold queue and what it holds.
type holdRef struct {
	name string
	topology.HoldInfo
}

// exists reports whether name may exist: listed, or no list to tell.
func (l listing) exists(name string) bool {
	if l.err != nil {
		return true
	}
	_, ok := l.byName[name]
	return ok
}

func (o *ops) queueStats(ctx context.Context, p *passive, cfg admin.Queue, l listing) (admin.QueueStats, error) {
	st := admin.QueueStats{Queue: cfg.Name, Holds: []admin.HoldStats{}}
	// The queue itself is declared even when not listed: a command names
	// it, and the answer must be the broker's.
	work, found, err := p.declare(ctx, cfg.Name)
	if err != nil {
		return st, err
	}
	st.Ready, st.Consumers = work.Messages, work.Consumers
	deadFound := false
	if o.opts.NoDeadLetterQueues {
		st.Missing = append(st.Missing, "dead letters: none are kept (rabbitmq.Options.NoDeadLetterQueues)")
	} else if dead := o.names.Dead(cfg.Name).Name; l.exists(dead) {
		q, ok, err := p.declare(ctx, dead)
		if err != nil {
			return st, err
		}
		if ok {
			st.Dead, deadFound = q.Messages, true
		}
	}
	switch {
	case !found && !deadFound:
		return st, unknownQueue(fmt.Sprintf("stats of %q", cfg.Name), "no such queue on the broker")
	case !found:
		// Its dead letters outlived it: show them, and why they cannot be
		// re-driven.
		st.Missing = append(st.Missing, "the queue itself does not exist (deleted?): its dead letters stay, and cannot be re-driven until it is declared again")
		return st, nil
	}
	if marker := pausedMarker(cfg.Name); len(marker) <= codec.MaxShortString && l.exists(marker) {
		if _, st.Paused, err = p.declare(ctx, marker); err != nil {
			return st, err
		}
	}
	if cfg.PluginDelay {
		st.Missing = append(st.Missing, "waiting: jobs held by the delayed-message-exchange plugin cannot be counted")
	}
	if cfg.LadderDelay {
		st.Missing = append(st.Missing, "waiting: jobs on the delay ladder wait in levels every ladder-mode queue shares, so they cannot be counted per queue")
	}
	return st, o.countHolds(ctx, p, cfg, l, &st)
}

// countHolds counts, into st, the jobs in flight on cfg's queue and the
// waits in its hold queues: found in l, or without the management API
// looked for by the names its retry schedule gives.
func (o *ops) countHolds(ctx context.Context, p *passive, cfg admin.Queue, l listing, st *admin.QueueStats) error {
	var holds []holdRef
	if l.err != nil {
		st.Unacked = admin.NotSeen
		st.Missing = append(st.Missing, "in flight: "+l.err.Error())
		st.Missing = append(st.Missing, "deferred waits: their hold queues cannot be listed without the management API")
		holds = o.retryHolds(cfg)
		if len(holds) > 0 {
			st.Missing = append(st.Missing, "retry waits: counted in the queues named as its hold queues would be, whose arguments (what tells a hold queue from another queue of that name) only the management API shows")
		}
	} else {
		st.Unacked = l.byName[cfg.Name].Unacked
		holds = l.holds[cfg.Name]
	}
	now := time.Now()
	for _, h := range holds {
		q, found, err := p.declare(ctx, h.name)
		if err != nil {
			return err
		}
		if !found || q.Messages == 0 {
			continue
		}
		st.Holds = append(st.Holds, admin.HoldStats{Name: h.name, Kind: h.Kind, Delay: h.Delay, Jobs: q.Messages, NextReleaseBy: now.Add(h.Delay)})
		st.Waiting += q.Messages
	}
	return nil
}

// retryHolds names the retry hold queues q's retry schedule uses, when q
// gives one.
func (o *ops) retryHolds(q admin.Queue) []holdRef {
	if q.MaxAttempts == 0 {
		return nil
	}
	cfg := runtime.QueueConfig{Name: q.Name, MaxAttempts: q.MaxAttempts, RetryBase: q.RetryBase, RetryMax: q.RetryMax}
	if q.Quorum {
		cfg.QueueType = runtime.QueueQuorum
	}
	seen := map[string]bool{}
	var holds []holdRef
	for attempt := 1; attempt < cfg.MaxAttempts; attempt++ {
		h, err := o.names.HoldOf(cfg, admin.HoldRetry, cfg.RetryDelay(attempt), o.opts.Granularity)
		if err != nil || seen[h.Name] {
			continue
		}
		seen[h.Name] = true
		info, _ := o.names.NamedLikeHold(h.Name)
		info.Queue = q.Name // the name alone may cut it elsewhere
		holds = append(holds, holdRef{h.Name, info})
	}
	return holds
}
