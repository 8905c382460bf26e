package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/queuey/queuey/internal/adminapi"
	"github.com/queuey/queuey/internal/clock"
	"github.com/queuey/queuey/internal/msgpack/mpscan"
	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/waits"
)

// MemoryBackend is a Backend that keeps every queue in process. It follows
// the same rules as the RabbitMQ backend: waits rounded up to
// DefaultGranularity and refused above MaxDeferral, one FIFO per priority
// with higher priorities first, deferred jobs returning at the queue's
// maximum priority, prefetch limits, redelivery of unsettled deliveries when
// a subscription closes, dead letters with reasons, and poison messages moved
// aside. It is safe for concurrent use. What it holds is lost when the
// process ends.
type MemoryBackend struct {
	log *slog.Logger
	clk clock.Clock // its waits' and its workers' schedules'

	mu     sync.Mutex
	queues map[string]*memQueue
	timers map[clock.Timer]memHold // waits not yet over
	leases map[string]*memLease    // made on first use
	// limits are the queues' global limits, made on first use;
	// limitTimers the rates' pending returns.
	limits      map[string]*memLimit
	limitTimers map[clock.Timer]struct{}
	pauses      memPauses
	seq         uint64
	closed      bool
	// maxMessage is MemoryMaxMessageSize's, 0 for the default.
	maxMessage int
	// told are the calls to subscriptions' dead-letter notes to make
	// once mu is unlocked (see unlock).
	told []func()
}

// unlock unlocks b.mu, then makes the calls queued in b.told.
func (b *MemoryBackend) unlock() {
	told := b.told
	b.told = nil
	b.mu.Unlock()
	for _, fn := range told {
		fn()
	}
}

// tellLocked has sub tell of env, dead-lettered for reason, once b.mu is
// unlocked.
func (b *MemoryBackend) tellLocked(sub *memSub, env *Envelope, reason string) {
	b.told = append(b.told, func() { sub.dead.Tell(DeadLetter{Env: env, Reason: reason}, MaxUnnotifiedDeadLetters) })
}

var (
	_ Backend            = (*MemoryBackend)(nil)
	_ Redelivery         = (*memDelivery)(nil)
	_ DeadLetterNotifier = (*memSub)(nil)
)

// MemoryOption configures a MemoryBackend.
type MemoryOption func(*MemoryBackend)

// MemoryLogger makes l the memory backend's logger (Backend.Logger), which
// receives its records (poison messages, jobs dead-lettered after
// unsettled deliveries) and those of every worker over it. Nil, or no
// MemoryLogger, means slog.Default().
func MemoryLogger(l *slog.Logger) MemoryOption {
	return func(b *MemoryBackend) {
		if l != nil {
			b.log = l
		}
	}
}

// NewMemoryBackend returns an empty MemoryBackend.
func NewMemoryBackend(opts ...MemoryOption) *MemoryBackend {
	b := &MemoryBackend{
		log:    slog.Default(),
		clk:    clock.Real{},
		queues: map[string]*memQueue{},
		timers: map[clock.Timer]memHold{},
	}
	for _, opt := range opts {
		opt(b)
	}
	return b
}

// Logger returns the backend's logger (MemoryLogger).
func (b *MemoryBackend) Logger() *slog.Logger { return b.log }

type memQueue struct {
	cfg   QueueConfig
	ready memHeap
	dead  []memDead
	subs  []*memSub
	next  int // round-robin start among subs
}

// memMsg is a message on a queue: a valid envelope or a raw body that is not
// one.
type memMsg struct {
	env  *Envelope
	raw  []byte
	prio uint8
	seq  uint64
	// returns counts the deliveries that came back unsettled (a closed
	// subscription, a requeue): each is an attempt, as on RabbitMQ.
	returns int
}

// Declare creates q, or checks that it exists with the same arguments.
func (b *MemoryBackend) Declare(ctx context.Context, q QueueConfig) error {
	if err := q.Validate(); err != nil {
		return err
	}
	q = q.WithDefaults()
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return ErrClosed
	}
	if old, ok := b.queues[q.Name]; ok {
		if err := kindConflict(old.cfg, q); err != nil {
			return err
		}
		if old.cfg.MaxPriority != q.MaxPriority || old.cfg.QueueType != q.QueueType {
			return fmt.Errorf("%w: queue %q has %s queue_type=%s, declared with %s queue_type=%s",
				ErrQueueMismatch, q.Name, describePriority(old.cfg.MaxPriority), old.cfg.QueueType, describePriority(q.MaxPriority), q.QueueType)
		}
		if old.cfg.Kind == "" {
			old.cfg.Kind = q.Kind
		}
		return nil
	}
	b.queues[q.Name] = &memQueue{cfg: q}
	return nil
}

// Publish stores env on its queue, at once or after delay. A job larger
// than the backend's max message size (MemoryMaxMessageSize) is refused
// with ErrTooLarge, as a broker would refuse it.
func (b *MemoryBackend) Publish(ctx context.Context, env *Envelope, delay time.Duration) error {
	if err := b.checkSize(env); err != nil {
		return err
	}
	return b.publish(ctx, env.Clone(), env.Priority, delay, false, adminapi.HoldDeferred)
}

// ownedPublisher is a backend that can keep an envelope nobody else holds
// without the copy Publish makes (Producer.enqueue): the memory backend.
type ownedPublisher interface {
	// publishOwned is Publish of env, which the backend keeps as it is.
	publishOwned(ctx context.Context, env *Envelope, delay time.Duration) error
	// keeper returns the backend that keeps the envelopes. A type that
	// embeds one has its methods too, but is not it: its own Publish
	// must see every job.
	keeper() Backend
}

func (b *MemoryBackend) keeper() Backend { return b }

// publishOwned is Publish of an envelope nobody else holds: it is stored
// without a copy.
func (b *MemoryBackend) publishOwned(ctx context.Context, env *Envelope, delay time.Duration) error {
	if err := b.checkSize(env); err != nil {
		return err
	}
	return b.publish(ctx, env, env.Priority, delay, false, adminapi.HoldDeferred)
}

// publish stores env (owned by the backend from here on) at wire priority
// prio; atMax raises it to the queue's maximum. A wait is held as kind.
func (b *MemoryBackend) publish(ctx context.Context, env *Envelope, prio uint8, delay time.Duration, atMax bool, kind adminapi.HoldKind) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.unlock()
	return b.publishLocked(env, prio, delay, atMax, kind)
}

func (b *MemoryBackend) publishLocked(env *Envelope, prio uint8, delay time.Duration, atMax bool, kind adminapi.HoldKind) error {
	d, err := waits.Round(delay, DefaultGranularity)
	if err != nil {
		return fmt.Errorf("queue %q: %w", env.Queue, err)
	}
	if b.closed {
		return ErrClosed
	}
	q, ok := b.queues[env.Queue]
	if !ok {
		return errs.Unknown(env.Queue, "was not declared on this backend")
	}
	if atMax {
		prio = q.cfg.topPriority()
	}
	b.seq++
	m := &memMsg{env: env, prio: min(prio, q.cfg.topPriority()), seq: b.seq}
	if d == 0 {
		b.pushLocked(q, m)
		return nil
	}
	var t clock.Timer
	t = b.clk.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.unlock()
		if _, live := b.timers[t]; !live {
			return
		}
		delete(b.timers, t)
		b.seq++
		m.seq = b.seq // a wait ends at the back of its priority, as a dead-lettered hold-queue message does
		b.pushLocked(q, m)
	})
	b.timers[t] = memHold{queue: q.cfg.Name, kind: kind, due: b.clk.Now().Add(d)}
	return nil
}

// publishRaw puts body on queue as a message of its own, as a foreign
// producer might (Hooks, for tests). A body that is not a
// msgpack Envelope of this queue is poison: it is moved to the dead
// letters when it reaches a consumer.
func (b *MemoryBackend) publishRaw(ctx context.Context, queue string, body []byte) error {
	m := &memMsg{raw: append([]byte(nil), body...)}
	var env Envelope
	if err := mpscan.Unmarshal(body, &env); err == nil && env.ID != "" && env.Queue == queue {
		m.env, m.raw = &env, nil
		m.prio = env.Priority
	}
	b.mu.Lock()
	defer b.unlock()
	q, ok := b.queues[queue]
	if !ok {
		return errs.Unknown(queue, "was not declared on this backend")
	}
	b.seq++
	m.seq = b.seq
	m.prio = min(m.prio, q.cfg.topPriority())
	b.pushLocked(q, m)
	return nil
}

func (b *MemoryBackend) pushLocked(q *memQueue, m *memMsg) {
	q.ready.push(m)
	b.dispatchLocked(q)
}

// dispatchLocked hands ready messages to subscriptions with room under
// their prefetch, round robin.
func (b *MemoryBackend) dispatchLocked(q *memQueue) {
	for q.ready.Len() > 0 {
		sub := q.pickLocked()
		if sub == nil {
			return
		}
		m := q.ready.pop()
		if m.env == nil {
			reason := "not a valid envelope: body is not a msgpack Envelope of this queue"
			b.log.Error("queuey: poison message moved to dead letters", "queue", q.cfg.Name, "reason", reason, "bytes", len(m.raw))
			q.dead = append(q.dead, memDead{reason: reason, body: m.raw, at: b.deadNow()})
			b.tellLocked(sub, &Envelope{Queue: q.cfg.Name, Kind: q.cfg.Kind}, reason)
			continue
		}
		d := &memDelivery{b: b, q: q, sub: sub, msg: m, redelivered: m.returns > 0}
		d.env = *m.env
		if d.env.Headers != nil {
			// The consumer may change its copy; a requeued message
			// goes back as it came.
			d.env.Headers = maps.Clone(d.env.Headers)
		}
		if m.returns > 0 && (sub.orphans == nil || !sub.orphans(&d.env)) {
			// Each return of an unsettled delivery is an attempt, as on
			// RabbitMQ; past max_attempts the job is dead.
			d.env.Attempt = max(d.env.Attempt, 1) + m.returns
			d.env.MaxAttempts = q.cfg.MaxAttempts // the queue's rule, whatever the job says
			if d.env.Attempt > d.env.MaxAttempts {
				dead := d.env
				runs := dead.Attempt - 1
				reason := errs.Unsettled(runs, dead.MaxAttempts)
				b.log.Error("queuey: job dead-lettered", "queue", q.cfg.Name, "job_id", dead.ID, "attempt", runs, "max_attempts", dead.MaxAttempts, "reason", reason)
				dead.Attempt, dead.LastError = runs, reason
				q.dead = append(q.dead, memDead{env: &dead, reason: reason, at: b.deadNow()})
				told := dead
				b.tellLocked(sub, &told, reason)
				continue
			}
		}
		sub.unacked[d] = struct{}{}
		sub.ch <- d // never blocks: the buffer holds prefetch and so does unacked
	}
}

func (q *memQueue) pickLocked() *memSub {
	n := len(q.subs)
	for i := range n {
		s := q.subs[(q.next+i)%n]
		if !s.stopped && len(s.unacked) < s.prefetch {
			q.next = (q.next + i + 1) % n
			return s
		}
	}
	return nil
}

// Consume subscribes to q. The OrphanCheck ctx carries, if any, is asked
// before a redelivery is counted as an attempt.
func (b *MemoryBackend) Consume(ctx context.Context, q QueueConfig) (Subscription, error) {
	q = q.WithDefaults()
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return nil, ErrClosed
	}
	mq, ok := b.queues[q.Name]
	if !ok {
		return nil, errs.Unknown(q.Name, "was not declared on this backend")
	}
	s := &memSub{b: b, q: mq, prefetch: q.Prefetch, ch: make(chan Delivery, q.Prefetch), unacked: map[*memDelivery]struct{}{}, orphans: OrphanCheckFrom(ctx)}
	mq.subs = append(mq.subs, s)
	b.dispatchLocked(mq)
	return s, nil
}

// Ready returns how many jobs wait ready on queue, not counting those
// handed to consumers or held in waits; an undeclared queue is
// ErrUnknownQueue.
func (b *MemoryBackend) Ready(ctx context.Context, queue string) (int, error) {
	b.mu.Lock()
	defer b.unlock()
	q, ok := b.queues[queue]
	if !ok {
		return 0, errs.Unknown(queue, "was not declared on this backend")
	}
	return q.ready.Len(), nil
}

// Busy reports whether queue has jobs ready or handed to a consumer and not
// yet settled, in one consistent look. Jobs held in a wait do not count.
// It serves tests that run a queue until it is drained (package
// queueytest); an undeclared queue is not busy.
func (b *MemoryBackend) Busy(queue string) bool {
	b.mu.Lock()
	defer b.unlock()
	q, ok := b.queues[queue]
	if !ok {
		return false
	}
	if q.ready.Len() > 0 {
		return true
	}
	for _, s := range q.subs {
		if len(s.unacked) > 0 {
			return true
		}
	}
	return false
}

// Close stops every wait and subscription. Jobs still held are dropped.
// Close is safe to call twice.
func (b *MemoryBackend) Close() error {
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	for t := range b.timers {
		t.Stop()
	}
	clear(b.timers)
	b.closeLeasesLocked()
	b.closeLimitsLocked()
	for _, q := range b.queues {
		for _, s := range q.subs {
			s.closeLocked(false)
			s.err = fmt.Errorf("consumer of %q: %w", q.cfg.Name, ErrClosed)
		}
		q.subs = nil
	}
	return nil
}

// memHeap orders messages by priority, highest first, then by arrival. Each
// entry carries its message's order key beside the pointer, so sifting
// compares entries in the slice without reading the messages they point
// to: a long backlog is ordered within one array.
type memHeap []memReady

// memReady is a ready message with its order key as it was when it was
// pushed: the complement of its priority in the top 8 bits, so that a
// higher priority sorts first, and its sequence in the other 56. A
// sequence reaches the top bits after 2^56 pushes: over two years at a
// billion pushes a second, thousands of times what this backend does.
type memReady struct {
	key uint64
	msg *memMsg
}

func (h memHeap) Len() int { return len(h) }

func (h memHeap) less(i, j int) bool { return h[i].key < h[j].key }

// push adds m, ordered by its prio and seq as they are now.
func (h *memHeap) push(m *memMsg) {
	*h = append(*h, memReady{key: uint64(^m.prio)<<56 | m.seq&(1<<56-1), msg: m})
	a := *h
	for j := len(a) - 1; j > 0; {
		i := (j - 1) / 2 // parent
		if !a.less(j, i) {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

// pop removes and returns the first message; h is not empty.
func (h *memHeap) pop() *memMsg {
	a := *h
	n := len(a) - 1
	m := a[0].msg
	a[0] = a[n]
	a[n] = memReady{}
	a = a[:n]
	*h = a
	for i := 0; ; {
		j := 2*i + 1
		if j >= n {
			break
		}
		if r := j + 1; r < n && a.less(r, j) {
			j = r
		}
		if !a.less(j, i) {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	return m
}
