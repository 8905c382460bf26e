package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var (
	_ runtime.Backend        = (*Backend)(nil)
	_ runtime.BatchPublisher = (*Backend)(nil)
	_ runtime.WaitTargeter   = (*Backend)(nil)
)

// Backend is the RabbitMQ runtime.Backend. It is safe for concurrent use.
//
// Backend wires the package's components, each the owner of its own state,
// and hands each call to them: connections (conn_*.go), confirmed
// publishing (pub_*.go), declares (decl_*.go), waits (wait_*.go),
// consuming and settling (sub_*.go), pausing (pause*.go), leases
// (lease.go), global limits (limit*.go) and the operators' reads
// (admin_*.go).
type Backend struct {
	opts Options
	log  *slog.Logger
	life lifetime
	once sync.Once

	pubConn  *connection  // publishes and queue declares
	cons     *consumePool // consumers' channels, spread over connections
	topoConn *connection  // delay exchange declares; dialled on first use
	// limitConn holds global limits' permits, and ledgerConn their
	// mint locks, ledgers and declares; each dialled on first use.
	limitConn  *connection
	ledgerConn *connection

	book      *queueBook
	enc       encoder
	pub       *publisher
	decl      *declarer // on pubConn
	topo      *declarer // on topoConn
	declares  *declares
	waiter    *waiter
	consumers *consumers
	pauses    *pauses
	leases    leases
	limits    *limits
	ops       *ops
	moving    migratingQueues // queues whose publishes go to their temporary queue
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
	return assemble(opts, version, urls, pubConn, conConn), nil
}

// assemble wires a backend of opts over its two first connections, for a
// broker of version. The topology connection is made here, and dialled
// only when a plugin-mode queue is declared.
func assemble(opts Options, version topology.Version, urls []string, pubConn, conConn *connection) *Backend {
	b := &Backend{
		opts:       opts,
		log:        opts.Logger,
		life:       newLifetime(),
		pubConn:    pubConn,
		cons:       newConsumePool(conConn, urls, opts.ConnectionName+" consume", opts.Logger),
		topoConn:   newConnection(urls, opts.ConnectionName+" topology", opts.Logger),
		limitConn:  newConnection(urls, opts.ConnectionName+" limits", opts.Logger),
		ledgerConn: newConnection(urls, opts.ConnectionName+" limit ledgers", opts.Logger),
		book:       newQueueBook(),
		pub:        newPublisher(pubConn, opts.PublishChannels, opts.MaxMessageSize, opts.Logger),
		decl:       newDeclarer(pubConn),
	}
	names := opts.names()
	warn := &warnings{log: opts.Logger}
	api := &mgmtAPI{url: opts.ManagementURL, conn: pubConn}
	b.topo = newDeclarer(b.topoConn)
	b.enc = encoder{maxBody: opts.MaxMessageSize, fit: b.pub.limits}
	b.declares = &declares{decl: b.decl, names: names, version: version, noDead: opts.NoDeadLetterQueues, api: api, warn: warn, log: opts.Logger}
	b.waiter = newWaiter(&waiter{
		book: b.book, enc: b.enc, pub: b.pub, decl: b.decl, topo: b.topo, names: names,
		granularity: opts.Granularity, mode: opts.Delay, provisioned: opts.ProvisionedDelayExchange, version: version,
	})
	b.consumers = &consumers{
		life: b.life, log: opts.Logger, warn: warn, pool: b.cons, book: b.book, enc: b.enc, pub: b.pub, waits: b.waiter,
		dead: &deadPublisher{book: b.book, declares: b.declares, pub: b.pub, log: opts.Logger},
		topo: b.topo, names: names, noDead: opts.NoDeadLetterQueues, redeclare: b.Declare,
		open: map[*subscription]struct{}{},
	}
	b.pauses = newPauses(&pauses{life: b.life, log: opts.Logger, conn: conConn, pubConn: pubConn, pool: b.cons, pub: b.pub})
	b.leases = leases{life: b.life, conn: conConn, pub: b.pub}
	b.limits = newLimits(b.life, opts.Logger, b.limitConn, b.ledgerConn, version, b.leases)
	b.ops = &ops{
		life: b.life, opts: opts, names: names, conn: conConn, pub: b.pub, decl: b.decl, enc: b.enc,
		book: b.book, api: api, pauses: b.pauses, version: version,
	}
	return b
}

// ServerVersion is the broker's version as it reported it when dialled.
func (b *Backend) ServerVersion() string { return b.pubConn.serverVersion() }

// Logger returns the backend's logger, Options.Logger or slog.Default().
func (b *Backend) Logger() *slog.Logger { return b.log }

// Close closes the backend's connections. Unsettled deliveries go back to
// their queues; publishes waiting for a confirm fail with ErrNotConfirmed.
// Close is safe to call twice.
func (b *Backend) Close() error {
	var err error
	b.once.Do(func() {
		b.life.end()
		// Acks of done work first, while the consuming connection is up:
		// they would otherwise be lost and the jobs delivered again.
		b.consumers.closeAcks()
		// Then connections: a declare stuck on a blocked connection
		// holds its declarer's lock until its connection closes.
		err = errors.Join(b.pubConn.close(), b.cons.close(), b.topoConn.close(), b.limitConn.close(), b.ledgerConn.close())
		b.limits.wait()
		b.decl.close()
		b.topo.close()
		b.pub.awaitLoops()
	})
	return err
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
	if err := b.life.refuse(""); err != nil {
		return err
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
	if err := b.declares.queue(ctx, q); err != nil {
		if !errors.Is(err, runtime.ErrQueueMismatch) {
			return err
		}
		if err := b.awaitMigration(ctx, q, err); err != nil {
			return err
		}
	}
	if err := d.declare(ctx, q); err != nil {
		return err
	}
	return b.book.record(q)
}

// resolve returns q as this backend runs it, validated, with its defaults
// and its delay exchange, and the delayer of its delay mode; it refuses a
// q with a derived name too long for the broker (declares.checkNames).
func (b *Backend) resolve(q runtime.QueueConfig) (runtime.QueueConfig, delayer, error) {
	if err := q.Validate(); err != nil {
		return q, nil, err
	}
	q = q.WithDefaults()
	if q.DelayExchange == "" {
		q.DelayExchange = b.opts.DelayExchange
	}
	d, err := b.waiter.delayer(q)
	if err != nil {
		return q, nil, err
	}
	if err := b.declares.checkNames(q, d); err != nil {
		return q, nil, err
	}
	return q, d, nil
}

// TargetWaits makes waits onto q possible without declaring q: it checks
// that q exists on the broker (and, with delay=plugin, its delay exchange),
// and keeps q's config, which says which hold queues or delay exchange its
// waits use. A queue declared through this backend keeps the config it was
// declared with.
func (b *Backend) TargetWaits(ctx context.Context, q runtime.QueueConfig) error {
	if err := b.life.refuse(""); err != nil {
		return err
	}
	if _, err := b.book.config(q.Name); err == nil {
		return nil
	}
	q, d, err := b.resolve(q)
	if err != nil {
		return err
	}
	if err := b.declares.exists(ctx, q.Name); err != nil {
		return err
	}
	if err := d.target(ctx, q); err != nil {
		return err
	}
	b.book.target(q)
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
		case b.life.over():
			errs[i] = b.life.refuse(fmt.Sprintf("publish to %q", env.Queue))
		default:
			var (
				msg amqp.Publishing
				err error
			)
			msg, bodies, err = b.enc.encodeAppend(bodies, env, codec.Options{Priority: env.Priority})
			if err != nil {
				errs[i] = err
				continue
			}
			msgs = append(msgs, outMsg{key: env.Queue, msg: msg})
			idx = append(idx, i)
		}
	}
	if len(msgs) > 0 {
		queues := make([]string, len(msgs))
		for j := range msgs {
			queues[j] = msgs[j].key
			msgs[j].key = b.moving.target(msgs[j].key)
		}
		for j, err := range b.pub.publishBatch(ctx, msgs) {
			if msgs[j].key != queues[j] && migratingErr(err) {
				err = b.publishAgain(ctx, queues[j], msgs[j].msg)
			} else if migratingErr(err) {
				err = b.publishMigrating(ctx, queues[j], msgs[j].msg, err)
			}
			errs[idx[j]] = missingQueue(queues[j], err)
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
	if err := b.life.refuse(fmt.Sprintf("publish to %q", env.Queue)); err != nil {
		return err
	}
	if delay > 0 {
		return b.waiter.wait(ctx, env.Queue, admin.HoldDeferred, env, codec.Options{Priority: env.Priority}, delay)
	}
	msg, err := b.enc.encode(env, codec.Options{Priority: env.Priority})
	if err != nil {
		return err
	}
	if to := b.moving.target(env.Queue); to != env.Queue {
		if err = b.pub.publish(ctx, to, msg); !migratingErr(err) {
			return missingQueue(env.Queue, err)
		}
	}
	return missingQueue(env.Queue, b.publishAgain(ctx, env.Queue, msg))
}
