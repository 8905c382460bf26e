package rabbitmq

import (
	"context"
	"log/slog"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/syncx"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// Global limits (runtime.Limiter) on RabbitMQ, with nothing but the
// broker: every place a limit grants is a message, a token, in a queue of
// its own (limit_names.go names them).
//
// A Limit of N is N token messages in queue "queuey.limit.<q>". A job that
// waits for one consumes that queue with prefetch 1; the token's arrival
// is the grant, and the consumer is cancelled at once so that it takes no
// second one. The job holds the token unacked while it runs and releases
// it with a reject that requeues it, for the next waiting consumer. A
// worker that dies holding tokens gives them back with its connection:
// the broker requeues what a closed channel held unacked.
//
// A Rate of N per Per is N token messages in queue "queuey.rate.<q>". A
// grant takes one as above and, in one AMQP transaction, publishes it to
// the rate's return queue, whose message TTL is Per and which
// dead-letters it back into the token queue, and acks it. So a token is
// spent at most once per Per: at most N grants in any window of Per, as
// the broker's clock measures them from the moment it enqueues the spent
// token. The caller sees its grant once the commit is done, a round trip
// and the commit's disk write later (tens of milliseconds on RabbitMQ 4),
// so grants as a client times them can come that much closer together.
//
// A LimitKey's value is a lease (lease.go) named after the queue and the
// value, whose queue expires after keyLeaseExpires unused.
//
// Minting: how many tokens exist is the count in the limit's ledger
// queue, one message. Tokens and ledger change together in one AMQP
// transaction, under the limit's mint lock, an exclusive queue that one
// connection holds at a time (another connection's declare of it is
// refused with RESOURCE_LOCKED). Each backend reconciles each limit it
// runs once, in the background, when it first consumes the limited queue
// or first acquires a permit of it: it takes the lock (retrying while
// another connection holds it), reads the ledger and mints what is
// missing, or retires tokens one by one as jobs give them back. A token
// queue found deleted is declared again and minted again to the ledger's
// count; a consumer the broker cancels because its token queue went away
// starts a reconcile again. The broker makes a transaction atomic per
// queue; a broker crash in the middle of a commit that spans the token
// and ledger queues can apply it to one of them only.
//
// The limits' channels are on a connection of their own, dialled when
// first needed: the reconciles' transactional channels, and one channel
// per waiting or holding job (kept for reuse once released). A connection
// has at most channel_max channels (2,047 by default), so a backend holds
// at most about that many permits at once; more wait for a channel.
//
// What global limits do not hold:
//   - Workers that run one queue with two values of a Limit (a rollout)
//     leave the value of the last to reconcile. A worker that lowers a
//     Limit holds the mint lock until enough tokens came free to retire;
//     one that raises it meanwhile waits for the lock.
//   - A ledger queue deleted while its token queue stays makes the next
//     reconcile mint N again beside the tokens there. A Rate's token
//     queue deleted while tokens wait out their period in a return queue
//     is minted again to N, and the tokens that come back add to it.
//   - A connection lost while its permits' jobs run lets other jobs take
//     their tokens: until those jobs end, more than N run.
//   - On RabbitMQ 3.10, a consume of a quorum token queue that meets the
//     queue's deletion can crash the consuming channel, and its
//     connection with it (a broker fault): the permits on that connection
//     are lost as above, and the waits go on over a new connection.

// keyLeaseExpires is the x-expires of a limit key's lease queue: a key
// unused that long has its queue deleted by the broker.
const keyLeaseExpires = 10 * time.Minute

// Waits of a reconcile and of a job waiting for a token queue to appear:
// jittered, doubling from limitRetryMin up to limitRetryMax.
const (
	limitRetryMin = 50 * time.Millisecond
	limitRetryMax = time.Second
)

// maxIdleLimitChannels caps the released channels kept for reuse, of
// each kind.
const maxIdleLimitChannels = 64

// limits holds the global limits of a backend: the token sets of the
// limited queues it runs and the channels of its permits.
type limits struct {
	life lifetime
	log  *slog.Logger
	// conn holds the permits' channels, so the tokens jobs hold; ledger
	// the rest: the mint locks, the ledgers, the declares and checks.
	// An error the broker answers with on a connection closes all of
	// it, and with it the tokens it holds while their jobs run on: what
	// can fail so, such as a ledger read while its quorum queue's
	// leader is down (a connection error on RabbitMQ 3.10), stays off
	// the connection that holds tokens.
	conn    *connection
	ledger  *connection
	version topology.Version
	leases  leases
	wg      sync.WaitGroup // the reconcilers

	mu      sync.Mutex
	sets    map[string]*tokenSet // by token queue name
	idle    []*amqp.Channel      // prefetch 1, nothing held
	idleTx  []*amqp.Channel      // in tx mode, prefetch 1, nothing held
	returns map[string]bool      // rate return queues declared
	closed  bool                 // wait has begun: no reconciler starts
	// returnsOf are the returned publishes of each tx channel.
	returnsOf map[*amqp.Channel]<-chan amqp.Return
}

func newLimits(life lifetime, log *slog.Logger, conn, ledger *connection, version topology.Version, l leases) *limits {
	return &limits{life: life, log: log, conn: conn, ledger: ledger, version: version, leases: l, sets: map[string]*tokenSet{}, returns: map[string]bool{}, returnsOf: map[*amqp.Channel]<-chan amqp.Return{}}
}

// tokenKind is what a set of tokens limits.
type tokenKind string

const (
	kindLimit tokenKind = "limit"
	kindRate  tokenKind = "rate"
)

// tokenSet is one limit's tokens (a Limit's or a Rate's, of one queue) as
// this backend runs them.
type tokenSet struct {
	kind                 tokenKind
	queue                string
	n                    int
	token, ledger, lock  string
	tokenArgs, ledgerArg amqp.Table
	// kick asks the reconciler for another pass: a waiting job found the
	// token queue gone.
	kick chan struct{}
	// reconciled is closed once a reconcile of this backend has brought
	// the tokens to n.
	reconciled chan struct{}
}

// start starts the reconcile of q's Limit and Rate, each once per backend,
// and returns their token sets (nil for none).
func (l *limits) start(q runtime.QueueConfig) (limit, rate *tokenSet) {
	if q.Limit > 0 {
		limit = l.set(kindLimit, q, q.Limit)
	}
	if !q.Rate.IsZero() {
		rate = l.set(kindRate, q, q.Rate.N)
	}
	return limit, rate
}

// set returns q's token set of kind, made and its reconciler started on
// first use.
func (l *limits) set(kind tokenKind, q runtime.QueueConfig, n int) *tokenSet {
	token, ledger, lock := limitTokenQueue(q.Name), limitLedgerQueue(q.Name), limitLockQueue(q.Name)
	if kind == kindRate {
		token, ledger, lock = rateTokenQueue(q.Name), rateLedgerQueue(q.Name), rateLockQueue(q.Name)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.sets[token]; ok {
		return s
	}
	typ := q.QueueType
	if typ == "" {
		typ = runtime.QueueClassic
	}
	args := func() amqp.Table {
		return l.version.Unlimited(topology.Queue{Args: amqp.Table{topology.ArgQueueType: string(typ)}}).Args
	}
	s := &tokenSet{
		kind: kind, queue: q.Name, n: n,
		token: token, ledger: ledger, lock: lock,
		tokenArgs: args(), ledgerArg: args(),
		kick: make(chan struct{}, 1), reconciled: make(chan struct{}),
	}
	l.sets[token] = s
	if !l.life.over() && !l.closed {
		l.wg.Add(1)
		go l.reconciler(s)
	}
	return s
}

// ask asks s's reconciler for another pass.
func (s *tokenSet) ask() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// channel returns a limits channel with prefetch 1, in tx mode when tx is
// set: an idle one, or a new one.
func (l *limits) channel(ctx context.Context, tx bool) (*amqp.Channel, error) {
	l.mu.Lock()
	pool := &l.idle
	if tx {
		pool = &l.idleTx
	}
	for len(*pool) > 0 {
		ch := (*pool)[len(*pool)-1]
		*pool = (*pool)[:len(*pool)-1]
		if !ch.IsClosed() {
			l.mu.Unlock()
			return ch, nil
		}
	}
	l.mu.Unlock()
	ch, err := l.conn.channel(ctx)
	if err != nil {
		return nil, err
	}
	if err := ch.Qos(1, 0, false); err != nil {
		_ = ch.Close()
		return nil, brokerError("limits: set prefetch 1", err)
	}
	if tx {
		if err := ch.Tx(); err != nil {
			_ = ch.Close()
			return nil, brokerError("limits: select transactions", err)
		}
		// A rate's spend publishes mandatory; the broker returns an
		// unroutable one before its commit's reply, and amqp091-go hands
		// the return over before that reply (see commitSpend).
		returns := ch.NotifyReturn(make(chan amqp.Return, 1))
		l.mu.Lock()
		l.returnsOf[ch] = returns
		l.mu.Unlock()
		go func() {
			<-ch.NotifyClose(make(chan *amqp.Error, 1))
			l.mu.Lock()
			delete(l.returnsOf, ch)
			l.mu.Unlock()
		}()
	}
	return ch, nil
}

// spendReturns returns the channel of tx channel ch's returned
// publishes, nil when ch has closed.
func (l *limits) spendReturns(ch *amqp.Channel) <-chan amqp.Return {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.returnsOf[ch]
}

// putBack keeps ch, holding nothing, for reuse, or closes it.
func (l *limits) putBack(ch *amqp.Channel, tx bool) {
	if ch.IsClosed() {
		return
	}
	l.mu.Lock()
	pool := &l.idle
	if tx {
		pool = &l.idleTx
	}
	if len(*pool) < maxIdleLimitChannels && !l.life.over() {
		*pool = append(*pool, ch)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	_ = ch.Close()
}

// wait waits for the reconcilers to end, once the backend is closed and
// its connections are. set starts a reconciler under l.mu only while
// closed is not set, so none starts once wait has set it.
func (l *limits) wait() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
}

// pause waits d, jittered, or until ctx ends or the backend closes; it
// reports whether the wait ran out.
func (l *limits) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(syncx.Jitter(d))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-l.life.done():
		return false
	}
}

// nextRetry doubles d up to limitRetryMax, from limitRetryMin.
func nextRetry(d time.Duration) time.Duration {
	if d == 0 {
		return limitRetryMin
	}
	return min(2*d, limitRetryMax)
}
