package rabbitmq

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// DefaultPublishChannels is how many confirm-mode channels publishes are
// spread over when Options.PublishChannels is zero.
const DefaultPublishChannels = 4

// The brokers' default max_message_size, the longest message body they
// take, in bytes: what Options.MaxMessageSize zero means, by the version of
// the broker dialled.
const (
	DefaultMaxMessageSize  = 128 << 20 // RabbitMQ 3.8 to 3.13: 128 MiB
	DefaultMaxMessageSize4 = 16 << 20  // RabbitMQ 4.0 and later: 16 MiB
)

// Default suffixes of the queues beside a logical queue q.
const (
	DefaultRetrySuffix    = topology.DefaultRetrySuffix    // q.retry.{ttl_ms}
	DefaultDeferredSuffix = topology.DefaultDeferredSuffix // q.deferred.{ttl_ms}
	DefaultDeadSuffix     = topology.DefaultDeadSuffix     // q.dead
)

// Options configure a Backend. The zero value is the default.
type Options struct {
	// RetrySuffix names retry hold queues "<q><RetrySuffix>.<ttl_ms>".
	// Empty means DefaultRetrySuffix (".retry").
	RetrySuffix string
	// DeferredSuffix names deferral hold queues "<q><DeferredSuffix>.<ttl_ms>".
	// Empty means DefaultDeferredSuffix (".deferred").
	DeferredSuffix string
	// DeadSuffix names dead-letter queues "<q><DeadSuffix>". Empty means
	// DefaultDeadSuffix (".dead"). The three suffixes differ, and
	// DeadSuffix is not RetrySuffix or DeferredSuffix followed by a dot
	// and digits, which names a hold queue.
	DeadSuffix string
	// Granularity is what every wait is rounded up to; it bounds how many
	// hold queues exist. It must be a whole number of milliseconds, 1ms to
	// 1h. Zero means runtime.DefaultGranularity (1s). The longest wait is
	// runtime.MaxDeferral rounded down to Granularity: a coarser
	// granularity refuses a queue whose RetryMax is above it.
	Granularity time.Duration
	// NoDeadLetterQueues, when true, declares no dead-letter queues: a dead
	// job is rejected (requeue=false) instead, for a broker policy to route.
	// False (zero) declares "<q><DeadSuffix>" beside every queue.
	NoDeadLetterQueues bool
	// Delay is how waits are held for queues whose QueueConfig.Delay is
	// empty. Empty means runtime.DefaultDelay of the queue's type: hold
	// queues (runtime.DelayQueue) for a classic queue, the ladder for a
	// quorum one. runtime.DelayQueue holds every such queue's waits in
	// hold queues (rounded up onto rungs for a quorum queue);
	// runtime.DelayPlugin holds them in an x-delayed-message exchange of
	// the delayed-message-exchange plugin, which must be enabled on the
	// broker (see the package doc); runtime.DelayLadder holds them on the
	// delay ladder of the queue's type, shared by every such queue.
	Delay runtime.DelayMode
	// DelayExchange names the x-delayed-message exchange that plugin-mode
	// queues share when their QueueConfig.DelayExchange is empty. Empty
	// means each such queue has its own, "<q>.delay". "queuey.control",
	// the exchange of pause notices, is refused.
	DelayExchange string
	// ProvisionedDelayExchange, when true, declares no delay exchange: the
	// operator provisions each one (durable, type x-delayed-message,
	// x-delayed-type=direct), and Declare of a plugin-mode queue checks
	// that it exists, failing with ErrDelayExchangeMissing when it does
	// not. The backend still binds the queue to it, which needs no
	// configure permission on the exchange. False (zero) declares the
	// exchange and the binding.
	ProvisionedDelayExchange bool
	// Logger receives the backend's warnings (quorum queues without
	// priorities) and errors (poison messages), and the records of every
	// worker over the backend (runtime.Backend.Logger). Nil means
	// slog.Default().
	Logger *slog.Logger
	// PublishChannels is how many confirm-mode channels publishes are
	// spread over, each carrying many publishes in flight. Zero means
	// DefaultPublishChannels.
	PublishChannels int
	// ManagementURL is the RabbitMQ management HTTP API, with credentials,
	// that the admin methods (Queues, QueueStats) use to list hold queues
	// and count jobs in flight, which AMQP cannot. Empty means the AMQP
	// URL's host on port 15672 with its credentials; ManagementOff uses
	// none, and those methods say what they cannot see. An API whose
	// cluster name is not the AMQP connection's is not read either
	// (ErrManagementMismatch; see Backend.CheckManagement).
	ManagementURL string
	// ConnectionName is shown in the broker's management UI, suffixed with
	// " publish", " consume", once a plugin-mode queue is declared,
	// " topology", and once a queue with a global limit is consumed or
	// asks for a permit, " limits". Empty means "queuey".
	ConnectionName string
	// Nodes are more AMQP URLs of the same cluster. Dial tries its url
	// first, then these in order; a lost connection is dialled again over
	// all of them, starting with the node after the one it was on, so a
	// client whose node died carries on through another. Empty means the
	// one url. A URL's password never appears in a log line or an error.
	Nodes []string
	// MaxMessageSize is the broker's max_message_size, in bytes: a job
	// whose message body would be longer is refused with runtime.ErrTooLarge
	// before it is sent, since the broker would close the channel instead,
	// failing every other publish in flight on it. The broker does not
	// tell it to clients: set it to the broker's max_message_size when
	// that was changed. Zero means the default of the broker's version:
	// DefaultMaxMessageSize (128 MiB) for 3.x, DefaultMaxMessageSize4 (16
	// MiB) for 4.x. At most runtime.MaxJobSize (512 MiB), which no broker
	// goes over whatever it is configured with.
	MaxMessageSize int
	// DeadLetterIndex, when true, keeps an index of the classic
	// dead-letter queues this backend reads deeply (a page after a
	// cursor, a letter by ID): one read of the whole queue, kept in
	// memory, that later reads use for as long as it is still true (see
	// the package doc on the admin API). It is for processes that
	// live long and read often, like the dashboard: a command that reads
	// once pays for reading the whole queue and gains nothing. False
	// (zero) reads the queue from its head on every read.
	DeadLetterIndex bool
	// MigrationWait is how long a declare that meets its queue with other
	// arguments waits while the queue is being migrated (queuey queues
	// migrate: its "<q>.migrating" queue exists), declaring again every
	// second, before it fails with runtime.ErrQueueMismatch. Zero means
	// DefaultMigrationWait; negative does not wait.
	MigrationWait time.Duration
}

// DefaultMigrationWait is Options.MigrationWait's default.
const DefaultMigrationWait = 10 * time.Minute

// ManagementOff as Options.ManagementURL turns the management API off.
const ManagementOff = "off"

// withDefaults validates o and returns it with every zero field set to its
// default.
func (o Options) withDefaults() (Options, error) {
	n := o.names().WithDefaults() // the suffixes' defaults have their home there
	o.RetrySuffix, o.DeferredSuffix, o.DeadSuffix = n.RetrySuffix, n.DeferredSuffix, n.DeadSuffix
	if o.Granularity == 0 {
		o.Granularity = runtime.DefaultGranularity
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MigrationWait == 0 {
		o.MigrationWait = DefaultMigrationWait
	}
	if o.PublishChannels == 0 {
		o.PublishChannels = DefaultPublishChannels
	}
	if o.ConnectionName == "" {
		o.ConnectionName = "queuey"
	}
	for field, v := range map[string]string{"RetrySuffix": o.RetrySuffix, "DeferredSuffix": o.DeferredSuffix, "DeadSuffix": o.DeadSuffix} {
		if !names.Valid(v) {
			return o, fmt.Errorf("%w: rabbitmq.Options.%s = %q, want %s+", runtime.ErrInvalidOption, field, v, names.Chars)
		}
	}
	if err := o.checkSuffixes(); err != nil {
		return o, err
	}
	if o.Granularity < time.Millisecond || o.Granularity > time.Hour || o.Granularity%time.Millisecond != 0 {
		return o, fmt.Errorf("%w: rabbitmq.Options.Granularity = %v, want a whole number of milliseconds, 1ms..1h (or 0 for %v): hold queue TTLs and x-delay are milliseconds", runtime.ErrInvalidOption, o.Granularity, runtime.DefaultGranularity)
	}
	if o.Delay != "" && o.Delay != runtime.DelayQueue && o.Delay != runtime.DelayPlugin && o.Delay != runtime.DelayLadder {
		return o, fmt.Errorf("%w: rabbitmq.Options.Delay = %q, want %q, %q, %q or empty (by queue type)", runtime.ErrInvalidOption, o.Delay, runtime.DelayQueue, runtime.DelayPlugin, runtime.DelayLadder)
	}
	if o.DelayExchange != "" && (!names.Valid(o.DelayExchange) || len(o.DelayExchange) > names.MaxShortString) {
		return o, fmt.Errorf("%w: rabbitmq.Options.DelayExchange = %q, want %s+, at most %d bytes (or empty for \"<q>.delay\")", runtime.ErrInvalidOption, o.DelayExchange, names.Chars, names.MaxShortString)
	}
	if o.DelayExchange == controlExchange {
		return o, fmt.Errorf("%w: rabbitmq.Options.DelayExchange = %q is the exchange that carries pause and resume notices; name the delay exchange otherwise", runtime.ErrInvalidOption, o.DelayExchange)
	}
	for i, n := range o.Nodes {
		if err := checkURL(fmt.Sprintf("rabbitmq.Options.Nodes[%d]", i), n); err != nil {
			return o, err
		}
	}
	if o.PublishChannels < 1 || o.PublishChannels > 64 {
		return o, fmt.Errorf("%w: rabbitmq.Options.PublishChannels = %d, want 1..64 (or 0 for %d)", runtime.ErrInvalidOption, o.PublishChannels, DefaultPublishChannels)
	}
	if o.MaxMessageSize < 0 || o.MaxMessageSize > runtime.MaxJobSize {
		return o, fmt.Errorf("%w: rabbitmq.Options.MaxMessageSize = %d, want the broker's max_message_size, 1..%d (runtime.MaxJobSize), or 0 for its version's default", runtime.ErrInvalidOption, o.MaxMessageSize, runtime.MaxJobSize)
	}
	return o, nil
}

// checkSuffixes refuses suffixes that would give two queues named after
// one queue q the same name: the dead-letter queue "<q><DeadSuffix>" and
// the hold queues "<q><RetrySuffix>.<ttl_ms>" and
// "<q><DeferredSuffix>.<ttl_ms>", whose TTL is decimal digits. (Two
// distinct suffixes cannot make a retry and a deferral hold queue collide:
// one would have to hold a "." among the other's TTL digits.) The delay
// exchange "<q>.delay" is an exchange, whose names are apart from queue
// names on the broker, and paused markers and lease queues are named by a
// prefix of their own ("queuey.paused.", "queuey.lease."), not by a
// suffix.
func (o Options) checkSuffixes() error {
	if o.RetrySuffix == o.DeferredSuffix || o.RetrySuffix == o.DeadSuffix || o.DeferredSuffix == o.DeadSuffix {
		return fmt.Errorf("%w: rabbitmq.Options suffixes %q, %q and %q must differ", runtime.ErrInvalidOption, o.RetrySuffix, o.DeferredSuffix, o.DeadSuffix)
	}
	for _, hold := range []struct{ field, suffix, kind string }{
		{"RetrySuffix", o.RetrySuffix, "retry"},
		{"DeferredSuffix", o.DeferredSuffix, "deferral"},
	} {
		ttl, ok := strings.CutPrefix(o.DeadSuffix, hold.suffix+".")
		if ok && ttl != "" && strings.Trim(ttl, "0123456789") == "" {
			return fmt.Errorf("%w: rabbitmq.Options.DeadSuffix = %q names dead-letter queues as %s %q names the %s hold queue of a %s ms wait (\"<q>%s\"): choose a DeadSuffix that is not %s, a dot and digits",
				runtime.ErrInvalidOption, o.DeadSuffix, hold.field, hold.suffix, hold.kind, ttl, o.DeadSuffix, hold.field)
		}
	}
	return nil
}

func (o Options) names() topology.Names {
	return topology.Names{RetrySuffix: o.RetrySuffix, DeferredSuffix: o.DeferredSuffix, DeadSuffix: o.DeadSuffix}
}
