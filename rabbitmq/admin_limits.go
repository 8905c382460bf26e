package rabbitmq

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/runtime"
)

var _ admin.LimitReader = (*Backend)(nil)

// LimitStates reads the global limits of queues (of every limited queue
// on the broker when queues is empty) from the management API's listings
// of the queues that hold them (see limit_names.go) and of their
// consumers, in two requests:
//
//   - Limit is the count of the Limit's tokens on the broker: the ready and
//     unacked messages of its token queue. That is the count its ledger
//     holds, except for a token on its way out while a lowered Limit is
//     retired (it counts until its retirement commits) or one the broker
//     lost. The ledger itself is not read: its one message would be taken
//     from its queue for the read, and a worker that mints meanwhile would
//     find no ledger and mint the whole Limit again.
//   - InUse is the unacked tokens (held by running jobs); Waiting is the
//     consumers attached to the token queue: each waiting job has one, and
//     a job that holds its token has cancelled its own. They are counted in
//     the listing of consumers, not by the queue's consumer count, which
//     for a quorum queue also counts a cancelled consumer while it holds a
//     token. A worker that retires tokens of a lowered Limit consumes the
//     token queue too, and counts as one waiting job meanwhile.
//   - Rate.N is the count of the Rate's tokens: those in its token queue
//     and those in its return queues, waiting out their period. Rate.Per
//     is queues' Rate.Per when its return queue exists or none does, else
//     the period of the return queue that holds the most tokens; zero when
//     no return queue exists (as before the first start under the rate)
//     and queues says none. RateReady is the token queue's ready tokens,
//     RateWaiting its consumers.
//   - KeysHeld is how many of the queue's key lease queues have their
//     lease message unacked (held by a running job); KeysWaiting is their
//     consumers beyond the holder, one per waiting job.
//
// The message counts are the management API's, which lag the broker by
// up to its statistics interval (5 s by default). Without the API,
// LimitStates returns an error wrapping admin.ErrCannotList. When queues
// is empty, a Limit or Rate is found by its token and ledger queues, both
// present, and a LimitKey by its lease queues, present only while a key
// is held or waited for, or until they expire when idle.
func (b *Backend) LimitStates(ctx context.Context, queues []runtime.QueueConfig) ([]admin.LimitState, error) {
	return b.ops.limitStates(ctx, queues)
}

// limitStates is Backend.LimitStates.
func (o *ops) limitStates(ctx context.Context, queues []runtime.QueueConfig) ([]admin.LimitState, error) {
	qs, err := o.listQueues(ctx)
	if err != nil {
		return nil, fmt.Errorf("global limits: %w", err)
	}
	c, err := o.api.client(ctx)
	if err != nil {
		return nil, fmt.Errorf("global limits: %w", err)
	}
	cs, err := c.Consumers(ctx)
	if err != nil {
		return nil, fmt.Errorf("global limits: %w: %v", admin.ErrCannotList, err)
	}
	l := newLimitListing(qs, cs)
	if len(queues) == 0 {
		queues = l.limited()
	}
	out := []admin.LimitState{}
	for _, q := range queues {
		if q.Limited() {
			out = append(out, l.state(q))
		}
	}
	return out, nil
}

// limitListing is the management API's listing of a virtual host's
// queues, for reading global limits.
type limitListing struct {
	byName map[string]mgmt.Queue
	// consumers counts the consumers attached to each queue.
	consumers map[string]int
	// keys are the limit key lease queues, by the queue they are of.
	keys map[string][]mgmt.Queue
}

func newLimitListing(qs []mgmt.Queue, cs []mgmt.Consumer) *limitListing {
	l := &limitListing{byName: make(map[string]mgmt.Queue, len(qs)), consumers: map[string]int{}, keys: map[string][]mgmt.Queue{}}
	for _, c := range cs {
		l.consumers[c.Queue.Name]++
	}
	for _, q := range qs {
		l.byName[q.Name] = q
	}
	for _, q := range qs {
		if name, ok := l.keyQueueOf(q.Name); ok {
			l.keys[name] = append(l.keys[name], q)
		}
	}
	return l
}

// keyQueueOf returns the queue whose limit key lease queue is name
// (keyQueueName).
func (l *limitListing) keyQueueOf(name string) (string, bool) { return keyQueueName(name) }

// limited returns the queues whose limits the listing holds, sorted by
// name: a Limit or a Rate by its token and ledger queues, a LimitKey by
// its lease queues. Their Limit, Rate and LimitKey are stand-ins that say
// which limits the queue has.
func (l *limitListing) limited() []runtime.QueueConfig {
	found := map[string]*runtime.QueueConfig{}
	get := func(q string) *runtime.QueueConfig {
		if c, ok := found[q]; ok {
			return c
		}
		c := &runtime.QueueConfig{Name: q}
		found[q] = c
		return c
	}
	for name := range l.byName {
		if q, ok := strings.CutPrefix(name, limitQueuePrefix); ok && l.has(limitLedgerQueue(q)) {
			get(q).Limit = 1
		}
		if q, ok := strings.CutPrefix(name, rateQueuePrefix); ok && l.has(rateLedgerQueue(q)) {
			get(q).Rate = runtime.Rate{N: 1}
		}
	}
	for q := range l.keys {
		get(q).LimitKey = "Key"
	}
	out := make([]runtime.QueueConfig, 0, len(found))
	for _, q := range slices.Sorted(maps.Keys(found)) {
		out = append(out, *found[q])
	}
	return out
}

func (l *limitListing) has(name string) bool {
	_, ok := l.byName[name]
	return ok
}

// ratePeriods are the periods a valid runtime.Rate takes, in the order a
// tie between their return queues is broken.
var ratePeriods = []time.Duration{time.Second, time.Minute, time.Hour}

// state is q's LimitState as the listing has it.
func (l *limitListing) state(q runtime.QueueConfig) admin.LimitState {
	st := admin.LimitState{Queue: q.Name}
	if q.Limit > 0 {
		if t, ok := l.byName[limitTokenQueue(q.Name)]; ok {
			st.Limit = t.Ready + t.Unacked
			st.InUse = t.Unacked
			st.Waiting = l.consumers[t.Name]
		}
	}
	if !q.Rate.IsZero() {
		n := 0
		if t, ok := l.byName[rateTokenQueue(q.Name)]; ok {
			n = t.Ready + t.Unacked
			st.RateReady = t.Ready
			st.RateWaiting = l.consumers[t.Name]
		}
		per, most := time.Duration(0), -1
		for _, p := range ratePeriods {
			r, ok := l.byName[rateReturnQueue(q.Name, p)]
			if !ok {
				continue
			}
			n += r.Ready + r.Unacked
			if r.Ready+r.Unacked > most {
				per, most = p, r.Ready+r.Unacked
			}
		}
		if q.Rate.Per != 0 && (most < 0 || l.has(rateReturnQueue(q.Name, q.Rate.Per))) {
			per = q.Rate.Per
		}
		if n > 0 || per != 0 {
			st.Rate = runtime.Rate{N: n, Per: per}
		}
	}
	if q.LimitKey != "" {
		for _, k := range l.keys[q.Name] {
			held := 0
			if k.Unacked > 0 {
				held = 1
			}
			st.KeysHeld += held
			st.KeysWaiting += max(0, l.consumers[k.Name]-held)
		}
	}
	return st
}
