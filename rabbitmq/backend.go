package rabbitmq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/sync/singleflight"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/queueerr"
	"github.com/queuey/queuey/internal/waits"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var (
	_ runtime.Backend        = (*Backend)(nil)
	_ runtime.BatchPublisher = (*Backend)(nil)
)

// Backend is the RabbitMQ runtime.Backend. It is safe for concurrent use.
type Backend struct {
	opts          Options
	log           *slog.Logger
	names         topology.Names
	version       topology.Version
	pubConn       *connection
	conConn       *connection   // the first of cons: short-lived channels open here
	cons          *consumePool  // consumers' channels, spread over connections
	checks        chan struct{} // one per pause check in flight
	notices       pauseNotices  // the binding every pause watch hears from
	pub           *publisher
	decl          *declarer
	holds         singleflight.Group // hold-queue declares in flight, by name
	warned        sync.Map           // keys of warnings given once
	holdDecl      holdDeclares       // which hold queues need a declare of their own
	copyRead      sync.Map           // dead-letter queues found not classic: read by copying (see isClassic)
	mgmtCheck     mgmtCheck          // which management API serves this broker
	limitPolicies limitPolicies      // the policies, read once to check delivery limits
	index         deadIndex          // indexes of dead-letter queues (Options.DeadLetterIndex)
	topoConn      *connection        // dialled on first use; see pluginDelayer.declare
	topo          *declarer
	delayers      map[runtime.DelayMode]delayer

	mu     sync.RWMutex
	queues map[string]runtime.QueueConfig // declared through this backend
	// targets are queues this backend did not declare, known for waits
	// (TargetWaits).
	targets map[string]runtime.QueueConfig
	subs    map[*subscription]struct{} // open subscriptions
	closed  chan struct{}
	once    sync.Once
}

// encodeCopy is encode of a copy of a job already on the broker (a
// retry, a deferral, a dead letter, a redelivery, a re-drive): made to fit
// what the publishing connection takes (codec.Options.Fit), so that the
// copy is never refused and the job never stuck where it is.
func (b *Backend) encodeCopy(env *runtime.Envelope, o codec.Options) (amqp.Publishing, error) {
	o.Fit = b.pub.limits()
	return b.encode(env, o)
}

// encode is codec.Encode with the size checks of encodeAppend.
func (b *Backend) encode(env *runtime.Envelope, o codec.Options) (amqp.Publishing, error) {
	msg, _, err := b.encodeAppend(nil, env, o)
	return msg, err
}

// encodeAppend is codec.EncodeAppend. A job whose payload alone is over the max message size is
// refused before it is encoded (codec.CheckPayload).
func (b *Backend) encodeAppend(dst []byte, env *runtime.Envelope, o codec.Options) (amqp.Publishing, []byte, error) {
	if env != nil {
		if err := codec.CheckPayload(env, codec.Limits{MaxBody: b.opts.MaxMessageSize}); err != nil {
			return amqp.Publishing{}, dst, fmt.Errorf("publish to %q: %w", codec.Clip(env.Queue), err)
		}
	}
	return codec.EncodeAppend(dst, env, o)
}

// Dial connects to the broker at url with two connections, one for
// publishing and one for consuming, so that a publisher blocked by a
// resource alarm does not stop acks. More consuming connections are
// dialled when consumers outgrow one (see the package doc). One for delay
// exchanges is dialled when the first plugin-mode queue is declared. Each connection is
// dialled over url and then Options.Nodes, in order, and after a loss over
// all of them again, starting with the node after the one that was lost.
func Dial(ctx context.Context, url string, opts Options) (*Backend, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkURL("rabbitmq.Dial's url", url); err != nil {
		return nil, err
	}
	urls := append([]string{url}, opts.Nodes...)
	pubConn, err := dialConnection(ctx, urls, opts.ConnectionName+" publish", opts.Logger)
	if err != nil {
		return nil, err
	}
	conConn, err := dialConnection(ctx, urls, opts.ConnectionName+" consume", opts.Logger)
	if err != nil {
		_ = pubConn.close()
		return nil, err
	}
	v := pubConn.serverVersion()
	version, err := topology.ParseVersion(v)
	if err != nil {
		version = topology.Version{Major: 3}
		opts.Logger.Warn("queuey: unknown RabbitMQ version; assuming 3.x", "version", v, "error", err)
	}
	if opts.MaxMessageSize == 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
		if version.Major >= 4 {
			opts.MaxMessageSize = DefaultMaxMessageSize4
		}
	}
	// Delay exchanges are declared on a connection of their own, dialled
	// only when a plugin-mode queue is declared.
	topoConn := newConnection(urls, opts.ConnectionName+" topology", opts.Logger)
	b := &Backend{
		opts:     opts,
		log:      opts.Logger,
		names:    opts.names(),
		version:  version,
		pubConn:  pubConn,
		conConn:  conConn,
		cons:     newConsumePool(conConn, urls, opts.ConnectionName+" consume", opts.Logger),
		checks:   make(chan struct{}, maxPauseChecks),
		pub:      newPublisher(pubConn, opts.PublishChannels, opts.MaxMessageSize, opts.Logger),
		decl:     newDeclarer(pubConn),
		topoConn: topoConn,
		topo:     newDeclarer(topoConn),
		queues:   map[string]runtime.QueueConfig{},
		subs:     map[*subscription]struct{}{},
		closed:   make(chan struct{}),
	}
	b.delayers = delayers(b)
	b.notices.b = b
	return b, nil
}

// ServerVersion is the broker's version as it reported it when dialled.
func (b *Backend) ServerVersion() string { return b.pubConn.serverVersion() }

// QuorumPriorities reports whether the broker's quorum queues order by
// priority: RabbitMQ 4.x quorum queues have two levels built in, normal
// (0-4) and high (5 and above), so a deferral returns ahead of the backlog
// when the queue's max_priority is 5 or more. RabbitMQ 3.x quorum queues
// have none, and deferred jobs return FIFO. A quorum queue is never
// declared with x-max-priority: neither version accepts it.
func (b *Backend) QuorumPriorities() bool { return b.version.QuorumPriorities() }

// Logger returns the backend's logger, Options.Logger or slog.Default().
func (b *Backend) Logger() *slog.Logger { return b.log }

// Close closes the backend's connections. Unsettled deliveries go back to
// their queues; publishes waiting for a confirm fail with ErrNotConfirmed.
// Close is safe to call twice.
func (b *Backend) Close() error {
	var err error
	b.once.Do(func() {
		close(b.closed)
		// Acks of done work first, while the consuming connection is up:
		// they would otherwise be lost and the jobs delivered again.
		b.mu.RLock()
		subs := slices.Collect(maps.Keys(b.subs))
		b.mu.RUnlock()
		for _, s := range subs {
			s.acks.close()
		}
		// Then connections: a declare stuck on a blocked connection
		// holds its declarer's lock until its connection closes.
		err = errors.Join(b.pubConn.close(), b.cons.close(), b.topoConn.close())
		b.decl.close()
		b.topo.close()
		b.pub.wait()
	})
	return err
}

func (b *Backend) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// Declare declares q, its dead-letter queue unless Options.NoDeadLetterQueues
// is set, and what its delay mode needs. Hold queues are declared later,
// right before each publish to them. A plugin-mode queue gets its delay
// exchange declared (or, with Options.ProvisionedDelayExchange, checked)
// first, so that a missing exchange or plugin (ErrDelayExchangeMissing,
// ErrPluginMissing) leaves no queue behind, and q bound to it last. A q
// that this backend could not run is refused with runtime.ErrInvalidConfig
// before anything is declared: a name derived from q's too long for the
// broker, or a RetryMax above runtime.MaxDeferral rounded down to
// Options.Granularity, whose retries would be refused as too long.
func (b *Backend) Declare(ctx context.Context, q runtime.QueueConfig) error {
	if b.isClosed() {
		return runtime.ErrClosed
	}
	q, d, err := b.resolve(q)
	if err != nil {
		return err
	}
	if limit := waits.Longest(b.opts.Granularity); q.RetryMax > limit {
		return fmt.Errorf("%w: queue %q: RetryMax = %v, want at most %v with rabbitmq.Options.Granularity = %v: a retry delay is rounded up to the granularity, and a wait above runtime.MaxDeferral (%v) is refused",
			runtime.ErrInvalidConfig, q.Name, q.RetryMax, limit, b.opts.Granularity, runtime.MaxDeferral)
	}
	// The delay exchange first: when it is missing, or the plugin is, no
	// queue is left behind.
	if err := d.prepare(ctx, q); err != nil {
		return err
	}
	work, prio := topology.Work(q, b.version)
	switch prio {
	case topology.PrioritiesNone:
		b.log.Warn("queuey: RabbitMQ 3.x quorum queues have no priorities: declared without x-max-priority, so deferred jobs return in FIFO order, not ahead of the backlog (RabbitMQ 4.x quorum queues have two levels)",
			"queue", q.Name, "max_priority", q.MaxPriority, "broker_version", b.version.String())
	case topology.PrioritiesTooLow:
		b.log.Warn(fmt.Sprintf("queuey: RabbitMQ 4.x quorum queues have two priority levels, normal (0-4) and high (%d and above); deferred jobs travel at max_priority, which is normal here, so they return in FIFO order, not ahead of the backlog: set max_priority to %d or more", topology.QuorumHighPriority, topology.QuorumHighPriority),
			"queue", q.Name, "max_priority", q.MaxPriority, "broker_version", b.version.String())
	}
	if err := b.declareWork(ctx, work); err != nil {
		return err
	}
	if !b.opts.NoDeadLetterQueues {
		if err := b.declareDead(ctx, q); err != nil {
			dead := b.deadQueue(q)
			if isCode(err, amqp.PreconditionFailed) {
				return mismatchError(dead, err, true)
			}
			return brokerError(fmt.Sprintf("declare dead-letter queue %q", dead.Name), err)
		}
	}
	b.checkPolicyLimits(ctx, q)
	if err := d.declare(ctx, q); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.queues[q.Name]; ok {
		if err := queueerr.KindConflict(q.Name, old.Kind, q.Kind); err != nil {
			return err
		}
		q.Kind = cmp.Or(q.Kind, old.Kind)
	}
	b.queues[q.Name] = q
	return nil
}

// maxTTLDigits is how many digits the longest hold queue TTL has, in
// milliseconds: runtime.MaxDeferral.
var maxTTLDigits = len(strconv.FormatInt(runtime.MaxDeferral.Milliseconds(), 10))

// checkNames refuses q, before anything is declared, when a broker name it
// would need is longer than an AMQP short string: q itself, its dead-letter
// queue, its longest hold queue name, or its delay exchange; or when its
// delay exchange would be the pause notices' exchange; or when q's name is
// one a hold queue of another queue is given ("orders.retry.1000"), which
// would collide with it once that queue waits so long.
func (b *Backend) checkNames(q runtime.QueueConfig, d delayer) error {
	if h, ok := b.names.NamedLikeHold(q.Name); ok {
		// Named by the rule hold queues are named by: queue h.Queue's
		// waits of h.Delay would be published into it (or be refused by
		// it, declared otherwise), whenever h.Queue exists.
		return fmt.Errorf("%w: queue %q: that is the name of the hold queue of queue %q for its %s waits of %v; name the queue otherwise",
			runtime.ErrInvalidConfig, codec.Clip(q.Name), codec.Clip(h.Queue), h.Kind, h.Delay)
	}
	names := []struct{ what, name string }{{"queue name", q.Name}}
	if !b.opts.NoDeadLetterQueues {
		names = append(names, struct{ what, name string }{"dead-letter queue name", b.names.Dead(q.Name).Name})
	}
	switch d.(type) {
	case queueDelayer:
		suffix := b.opts.RetrySuffix
		if len(b.opts.DeferredSuffix) > len(suffix) {
			suffix = b.opts.DeferredSuffix
		}
		names = append(names, struct{ what, name string }{"longest hold queue name",
			q.Name + suffix + "." + strings.Repeat("9", maxTTLDigits)})
	case pluginDelayer:
		ex := plugin.ExchangeName(q)
		if ex == controlExchange {
			return fmt.Errorf("%w: queue %q: delay exchange %q is the exchange that carries pause and resume notices; name the delay exchange otherwise",
				runtime.ErrInvalidConfig, codec.Clip(q.Name), ex)
		}
		names = append(names, struct{ what, name string }{"delay exchange name", ex})
	}
	for _, n := range names {
		if len(n.name) > codec.MaxShortString {
			return fmt.Errorf("%w: queue %q: its %s %q is %d bytes, want at most %d (an AMQP short string): shorten the queue name",
				runtime.ErrInvalidConfig, codec.Clip(q.Name), n.what, codec.Clip(n.name), len(n.name), codec.MaxShortString)
		}
	}
	return nil
}

func (b *Backend) delayer(q runtime.QueueConfig) (delayer, error) {
	mode := q.Delay
	if mode == "" {
		mode = b.opts.Delay
	}
	d, ok := b.delayers[mode]
	if !ok {
		return nil, fmt.Errorf("%w: queue %q: delay mode %q", runtime.ErrInvalidConfig, q.Name, mode)
	}
	return d, nil
}

// declared returns the config q was declared with through this backend.
func (b *Backend) declared(name string) (runtime.QueueConfig, error) {
	b.mu.RLock()
	q, ok := b.queues[name]
	b.mu.RUnlock()
	if !ok {
		return q, queueerr.Unknown(name, "was not declared through this backend in this process (a wait needs that, to declare its hold queue)")
	}
	return q, nil
}

// resolve returns q as this backend runs it, validated, with its defaults
// and its delay exchange, and the delayer of its delay mode; it refuses a
// q with a derived name too long for the broker (checkNames).
func (b *Backend) resolve(q runtime.QueueConfig) (runtime.QueueConfig, delayer, error) {
	if err := q.Validate(); err != nil {
		return q, nil, err
	}
	q = q.WithDefaults()
	if q.DelayExchange == "" {
		q.DelayExchange = b.opts.DelayExchange
	}
	d, err := b.delayer(q)
	if err != nil {
		return q, nil, err
	}
	if err := b.checkNames(q, d); err != nil {
		return q, nil, err
	}
	return q, d, nil
}

// waitTarget returns the config of queue for a wait onto it: as declared
// through this backend, or as given to TargetWaits.
func (b *Backend) waitTarget(name string) (runtime.QueueConfig, error) {
	b.mu.RLock()
	q, ok := b.queues[name]
	if !ok {
		q, ok = b.targets[name]
	}
	b.mu.RUnlock()
	if !ok {
		return q, queueerr.Unknown(name, "was neither declared through this backend nor told to it (runtime.WaitTargeter): a wait needs the queue's config")
	}
	return q, nil
}

var _ runtime.WaitTargeter = (*Backend)(nil)

// TargetWaits makes waits onto q possible without declaring q: it checks
// that q exists on the broker (and, with delay=plugin, its delay exchange),
// and keeps q's config, which says which hold queues or delay exchange its
// waits use. A queue declared through this backend keeps the config it was
// declared with.
func (b *Backend) TargetWaits(ctx context.Context, q runtime.QueueConfig) error {
	if b.isClosed() {
		return runtime.ErrClosed
	}
	if _, err := b.declared(q.Name); err == nil {
		return nil
	}
	q, d, err := b.resolve(q)
	if err != nil {
		return err
	}
	err = b.decl.do(ctx, fmt.Sprintf("check queue %q", q.Name), func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(q.Name, true, false, false, false, nil)
		return err
	})
	switch {
	case isNoQueue(err):
		return queueerr.Unknown(q.Name, "does not exist on the broker: declare it (runtime.NewProducer, or a worker that handles it) before enqueueing onto it")
	case err != nil:
		return brokerError(fmt.Sprintf("check queue %q", q.Name), err)
	}
	if pd, ok := d.(pluginDelayer); ok {
		if err := pd.checkExchange(ctx, q); err != nil {
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.targets == nil {
		b.targets = make(map[string]runtime.QueueConfig)
	}
	b.targets[q.Name] = q
	return nil
}

// PublishBatch publishes envs to their queues at once, many in flight on
// one channel, each confirmed and mandatory, and returns one error per
// envelope.
func (b *Backend) PublishBatch(ctx context.Context, envs []*runtime.Envelope) []error {
	errs := make([]error, len(envs))
	msgs := make([]outMsg, 0, len(envs))
	idx := make([]int, 0, len(envs))
	// The bodies share one buffer, which lives until the last confirm.
	size := 0
	for _, env := range envs {
		if env != nil && len(env.Payload) <= b.opts.MaxMessageSize { // the others are refused
			size += codec.BodySize(env)
		}
	}
	bodies := make([]byte, 0, size)
	for i, env := range envs {
		switch {
		case env == nil:
			errs[i] = errors.New("rabbitmq: publish: nil envelope")
		case b.isClosed():
			errs[i] = fmt.Errorf("publish to %q: %w", env.Queue, runtime.ErrClosed)
		default:
			var (
				msg amqp.Publishing
				err error
			)
			msg, bodies, err = b.encodeAppend(bodies, env, codec.Options{Priority: env.Priority})
			if err != nil {
				errs[i] = err
				continue
			}
			msgs = append(msgs, outMsg{key: env.Queue, msg: msg})
			idx = append(idx, i)
		}
	}
	if len(msgs) > 0 {
		for j, err := range b.pub.publishBatch(ctx, msgs) {
			errs[idx[j]] = missingQueue(msgs[j].key, err)
		}
	}
	return errs
}

// Publish publishes env to env.Queue, confirmed and mandatory: at once when
// delay is zero or less, else through the queue's delay mode (its deferred
// hold queue, or its delay exchange, not mandatory) at the job's own
// priority.
func (b *Backend) Publish(ctx context.Context, env *runtime.Envelope, delay time.Duration) error {
	if env == nil {
		return errors.New("rabbitmq: publish: nil envelope")
	}
	if b.isClosed() {
		return fmt.Errorf("publish to %q: %w", env.Queue, runtime.ErrClosed)
	}
	if delay > 0 {
		return b.wait(ctx, env.Queue, admin.HoldDeferred, env, codec.Options{Priority: env.Priority}, delay)
	}
	msg, err := b.encode(env, codec.Options{Priority: env.Priority})
	if err != nil {
		return err
	}
	return missingQueue(env.Queue, b.pub.publish(ctx, env.Queue, msg))
}

// wait publishes env, encoded with o (its wire priority, and what it must
// fit when it is a copy of a job on the broker), to come back to queue
// after delay, at least one granularity (waits.RoundAtLeastOne). A delay that
// is too long or a queue not declared here is refused before anything is
// published.
func (b *Backend) wait(ctx context.Context, queue string, kind admin.HoldKind, env *runtime.Envelope, o codec.Options, delay time.Duration) error {
	rounded, err := waits.RoundAtLeastOne(delay, b.opts.Granularity)
	if err != nil {
		return fmt.Errorf("%s wait on queue %q: %w", kind, queue, err)
	}
	q, err := b.waitTarget(queue)
	if err != nil {
		return fmt.Errorf("%s wait: %w", kind, err)
	}
	d, err := b.delayer(q)
	if err != nil {
		return err
	}
	msg, err := b.encode(env, o)
	if err != nil {
		return err
	}
	return d.wait(ctx, q, kind, msg, rounded)
}

// maxPriority is the wire priority a deferred job of q travels at: its
// MaxPriority, or 0 on a queue of runtime.NoPriority.
func maxPriority(q runtime.QueueConfig) uint8 {
	return uint8(min(max(q.MaxPriority, 0), 255))
}
