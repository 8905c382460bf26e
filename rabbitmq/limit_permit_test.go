package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Global limits on RabbitMQ (runtime.Limiter): several backends, each
// with connections of its own as separate workers have, share one queue's
// limits through the broker.

// queueTypes are the queue types every limit test runs with.
var queueTypes = []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum}

// limitedQueue returns a config of a queue of type typ with a name of its
// own, the given Limit and Rate, whose limits' queues are deleted when t
// ends, after the backends dialled later are closed.
func limitedQueue(t *testing.T, typ runtime.QueueType, limit int, rate runtime.Rate) runtime.QueueConfig {
	t.Helper()
	q := runtime.DefaultQueueConfig(queueName(t))
	q.QueueType, q.Limit, q.Rate = typ, limit, rate
	if typ == runtime.QueueQuorum {
		q.MaxPriority = runtime.NoPriority
	}
	q = q.WithDefaults()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	_, _, _, _, all := rabbitmq.LimitQueues(q.Name)
	t.Cleanup(func() { deleteQueues(all...) })
	return q
}

// dialN dials n backends: n workers. With QUEUEY_TEST_LIMIT_LOG set,
// they log to stderr at debug level.
func dialN(t *testing.T, n int) []*rabbitmq.Backend {
	t.Helper()
	bs := make([]*rabbitmq.Backend, n)
	for i := range bs {
		opts := rabbitmq.Options{}
		if os.Getenv("QUEUEY_TEST_LIMIT_LOG") != "" {
			opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		bs[i] = dial(t, opts)
	}
	return bs
}

// acquire takes a permit of q from b, failing t when it takes longer than
// wait, and begins its run, as a worker does (a Rate's start is spent).
func acquire(t *testing.T, b *rabbitmq.Backend, q runtime.QueueConfig, key string) runtime.Permit {
	t.Helper()
	p, err := b.AcquirePermit(ctxT(t), q, key)
	if err != nil {
		t.Fatalf("acquire a permit of %q (key %q): %v", q.Name, key, err)
	}
	p.(runtime.PermitStarter).Started()
	return p
}

// refused asserts that b grants no permit of q for key within d.
func refused(t *testing.T, b *rabbitmq.Backend, q runtime.QueueConfig, key string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	p, err := b.AcquirePermit(ctx, q, key)
	if err == nil {
		p.Release()
		t.Fatalf("permit of %q (key %q) granted, want none while the limit is taken", q.Name, key)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("refused permit: %v, want context.DeadlineExceeded", err)
	}
}

// reconciled waits until every b has reconciled q's limits once.
func reconciled(t *testing.T, q runtime.QueueConfig, bs ...*rabbitmq.Backend) {
	t.Helper()
	for _, b := range bs {
		if err := rabbitmq.AwaitReconciled(ctxT(t), b, q.Name); err != nil {
			t.Fatal(err)
		}
	}
}

// ledger reads the count in ledger queue name, waiting while a
// reconcile holds the message (for a moment), and puts it back.
func ledger(t *testing.T, name string) int {
	t.Helper()
	ch := rawChannel(t)
	defer ch.Close()
	var m amqp.Delivery
	eventually.True(t, wait, func() bool {
		got, ok, err := ch.Get(name, false)
		if err != nil {
			t.Fatalf("read ledger %q: %v", name, err)
		}
		m = got
		return ok
	}, fmt.Sprintf("a message in ledger %q", name))
	defer func() { _ = m.Reject(true) }()
	if n := queueLen(t, ch, name); n != 0 {
		t.Fatalf("ledger %q holds %d more messages, want none", name, n)
	}
	n, err := strconv.Atoi(string(m.Body))
	if err != nil {
		t.Fatalf("ledger %q holds %q, want a count", name, m.Body)
	}
	return n
}

// ready is how many messages queue name holds ready.
func ready(t *testing.T, name string) int {
	t.Helper()
	ch := rawChannel(t)
	defer ch.Close()
	return queueLen(t, ch, name)
}

// consumers is how many consumers queue name has.
func consumers(t *testing.T, name string) int {
	t.Helper()
	ch := rawChannel(t)
	defer ch.Close()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect queue %q: %v", name, err)
	}
	return q.Consumers
}

// TestLimitPermitsAtMostN: backends acquiring permits of a queue with
// Limit N at once never hold more than N together, and all N are usable.
func TestLimitPermitsAtMostN(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 3
			q := limitedQueue(t, typ, n, runtime.Rate{})
			bs := dialN(t, 4)
			var held, most atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b := bs[i%len(bs)]
					for range 5 {
						p, err := b.AcquirePermit(ctxT(t), q, "")
						if err != nil {
							errs <- err
							return
						}
						h := held.Add(1)
						for m := most.Load(); h > m && !most.CompareAndSwap(m, h); m = most.Load() {
						}
						time.Sleep(time.Millisecond) // a run
						held.Add(-1)
						p.Release()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if m := most.Load(); m > n {
				t.Fatalf("%d permits held at once, want at most %d", m, n)
			}
			// All N at once, from different workers, and no N+1st.
			var ps []runtime.Permit
			for i := range n {
				ps = append(ps, acquire(t, bs[i], q, ""))
			}
			refused(t, bs[n], q, "", 300*time.Millisecond)
			ps[0].Release()
			ps[0] = acquire(t, bs[n], q, "")
			for _, p := range ps {
				p.Release()
			}
			_, ledgerQ := limitNames(q)
			if got := ledger(t, ledgerQ); got != n {
				t.Fatalf("ledger = %d, want %d", got, n)
			}
		})
	}
}

// limitNames returns q's Limit token and ledger queues.
func limitNames(q runtime.QueueConfig) (token, ledgerQ string) {
	token, ledgerQ, _, _, _ = rabbitmq.LimitQueues(q.Name)
	return token, ledgerQ
}

// limitQueuesOf is rabbitmq.LimitQueues of q's name.
func limitQueuesOf(q runtime.QueueConfig) (limitToken, limitLedger, rateToken, rateLedger string, all []string) {
	return rabbitmq.LimitQueues(q.Name)
}

// TestLimitMintedOnce: five workers that start at once mint the Limit's
// tokens once: the ledger says N and the token queue holds N.
func TestLimitMintedOnce(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 7
			q := limitedQueue(t, typ, n, runtime.Rate{})
			bs := dialN(t, 5)
			var wg sync.WaitGroup
			for _, b := range bs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := b.AcquirePermit(ctxT(t), q, "")
					if err != nil {
						t.Error(err)
						return
					}
					p.Release()
				}()
			}
			wg.Wait()
			reconciled(t, q, bs...)
			token, ledgerQ := limitNames(q)
			if got := ledger(t, ledgerQ); got != n {
				t.Fatalf("ledger = %d, want %d", got, n)
			}
			eventually.True(t, wait, func() bool { return ready(t, token) == n }, fmt.Sprintf("token queue holds %d", n))
			if got := ready(t, token); got != n {
				t.Fatalf("token queue holds %d, want %d", got, n)
			}
		})
	}
}

// TestLimitRaisedAndLowered: a worker with a higher Limit mints the
// difference; one with a lower Limit retires tokens as jobs release them,
// while the jobs that hold them run on; the ledger follows.
func TestLimitRaisedAndLowered(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			q := limitedQueue(t, typ, 10, runtime.Rate{})
			token, ledgerQ := limitNames(q)
			bs := dialN(t, 3)
			acquire(t, bs[0], q, "").Release()
			reconciled(t, q, bs[0])
			if got := ledger(t, ledgerQ); got != 10 {
				t.Fatalf("ledger = %d, want 10", got)
			}

			q15 := q
			q15.Limit = 15
			var ps []runtime.Permit
			for range 15 {
				ps = append(ps, acquire(t, bs[1], q15, ""))
			}
			reconciled(t, q15, bs[1])
			if got := ledger(t, ledgerQ); got != 15 {
				t.Fatalf("raised: ledger = %d, want 15", got)
			}
			refused(t, bs[0], q, "", 300*time.Millisecond)

			// 15 held; a worker with Limit 5 retires 10 as they come back.
			q5 := q
			q5.Limit = 5
			lowered := make(chan error, 1)
			go func() {
				// Its first permit waits for a token while the tokens retire.
				p, err := bs[2].AcquirePermit(ctxT(t), q5, "")
				if err == nil {
					p.Release()
				}
				lowered <- err
			}()
			for i, p := range ps {
				p.Release()
				if i == 4 {
					// Five released, five retired: ten held, ledger at 10.
					eventually.True(t, wait, func() bool { return ledger(t, ledgerQ) == 10 }, "ledger at 10")
				}
			}
			if err := within(t, lowered, "the lowering worker's permit"); err != nil {
				t.Fatal(err)
			}
			reconciled(t, q5, bs[2])
			if got := ledger(t, ledgerQ); got != 5 {
				t.Fatalf("lowered: ledger = %d, want 5", got)
			}
			eventually.True(t, wait, func() bool { return ready(t, token) == 5 }, "token queue holds 5")
			var five []runtime.Permit
			for i := range 5 {
				five = append(five, acquire(t, bs[i%3], q5, ""))
			}
			refused(t, bs[0], q5, "", 300*time.Millisecond)
			for _, p := range five {
				p.Release()
			}
		})
	}
}

// TestLimitClosedWorkerGivesTokensBack: a worker closed while it holds
// tokens gives them back with its connection, and others take them.
func TestLimitClosedWorkerGivesTokensBack(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 5
			q := limitedQueue(t, typ, n, runtime.Rate{})
			token, _ := limitNames(q)
			bs := dialN(t, 2)
			for range n {
				acquire(t, bs[0], q, "")
			}
			if got := ready(t, token); got != 0 {
				t.Fatalf("token queue holds %d while %d are taken, want 0", got, n)
			}
			if err := bs[0].Close(); err != nil {
				t.Fatal(err)
			}
			eventually.True(t, wait, func() bool { return ready(t, token) == n }, "the closed worker's tokens back")
			for range n {
				defer acquire(t, bs[1], q, "").Release()
			}
		})
	}
}

// TestLimitWaitEndsGivesTokenBack: a wait whose context ends gives back
// any token it was handed, and takes none afterwards.
func TestLimitWaitEndsGivesTokenBack(t *testing.T) {
	q := limitedQueue(t, runtime.QueueClassic, 1, runtime.Rate{})
	token, _ := limitNames(q)
	bs := dialN(t, 2)
	p := acquire(t, bs[0], q, "")
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		p, err := bs[1].AcquirePermit(ctx, q, "")
		if err == nil {
			p.Release()
		}
		waited <- err
	}()
	eventually.True(t, wait, func() bool { return consumers(t, token) == 1 }, "a consumer waiting for the token")
	cancel()
	if err := within(t, waited, "the wait to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait ended with %v, want context.Canceled", err)
	}
	p.Release()
	eventually.True(t, wait, func() bool { return ready(t, token) == 1 }, "the token back in its queue")
	acquire(t, bs[1], q, "").Release()
}

// TestLimitTokenQueueDeleted: a token queue deleted while jobs hold and
// wait for tokens is declared and minted again to the ledger's N; the
// old tokens' releases add nothing.
func TestLimitTokenQueueDeleted(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 3
			q := limitedQueue(t, typ, n, runtime.Rate{})
			token, ledgerQ := limitNames(q)
			bs := dialN(t, 2)
			var old []runtime.Permit
			for range n {
				old = append(old, acquire(t, bs[0], q, ""))
			}
			got := make(chan runtime.Permit, 1)
			go func() {
				p, err := bs[1].AcquirePermit(ctxT(t), q, "")
				if err != nil {
					t.Error(err)
					close(got)
					return
				}
				got <- p
			}()
			ch := rawChannel(t)
			if _, err := ch.QueueDelete(token, false, false, false); err != nil {
				t.Fatal(err)
			}
			p := within(t, got, "a permit after the token queue was deleted")
			if p == nil {
				t.FailNow()
			}
			p.Release()
			for _, p := range old {
				p.Release()
			}
			eventually.True(t, wait, func() bool { return ready(t, token) == n }, fmt.Sprintf("token queue holds %d", n))
			if got := ledger(t, ledgerQ); got != n {
				t.Fatalf("ledger = %d, want %d", got, n)
			}
			if got := ready(t, token); got != n {
				t.Fatalf("token queue holds %d, want %d", got, n)
			}
		})
	}
}

// TestLimitQuorumTokenSurvivesReturns: a quorum queue's token returned
// more often than RabbitMQ 4's default delivery limit (20) stays.
func TestLimitQuorumTokenSurvivesReturns(t *testing.T) {
	q := limitedQueue(t, runtime.QueueQuorum, 1, runtime.Rate{})
	token, _ := limitNames(q)
	b := dial(t, rabbitmq.Options{})
	for range 30 {
		acquire(t, b, q, "").Release()
	}
	eventually.True(t, wait, func() bool { return ready(t, token) == 1 }, "the token back")
}

// TestLimitTransactions checks what minting rests on, on the broker that
// runs: in a transaction over a token and a ledger queue of either type,
// nothing is applied before the commit, and a channel closed before its
// commit applies nothing; a commit applies publishes and acks together.
func TestLimitTransactions(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			tokens, led := queueName(t, ".tokens"), queueName(t, ".ledger")
			tokens, led = tokens+".tokens", led+".ledger"
			args := amqp.Table{"x-queue-type": string(typ)}
			setup := rawChannel(t)
			for _, name := range []string{tokens, led} {
				if _, err := setup.QueueDeclare(name, true, false, false, false, args); err != nil {
					t.Fatal(err)
				}
			}
			if err := setup.Publish("", led, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("0")}); err != nil {
				t.Fatal(err)
			}
			eventually.True(t, wait, func() bool { return queueLen(t, setup, led) == 1 }, "the ledger written")

			mint := func(commit bool) {
				ch := rawChannel(t)
				if err := ch.Tx(); err != nil {
					t.Fatal(err)
				}
				m, ok, err := ch.Get(led, false)
				if err != nil || !ok {
					t.Fatalf("get ledger: ok=%v err=%v", ok, err)
				}
				for range 3 {
					if err := ch.Publish("", tokens, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("t")}); err != nil {
						t.Fatal(err)
					}
				}
				if err := ch.Publish("", led, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("3")}); err != nil {
					t.Fatal(err)
				}
				if err := m.Ack(false); err != nil {
					t.Fatal(err)
				}
				// Before the commit: nothing applied (the ledger is held
				// unacked, not gone).
				if n := queueLen(t, setup, tokens); n != 0 {
					t.Fatalf("before commit: %d tokens, want 0", n)
				}
				if !commit {
					if err := ch.Close(); err != nil {
						t.Fatal(err)
					}
					return
				}
				if err := ch.TxCommit(); err != nil {
					t.Fatal(err)
				}
			}
			mint(false)
			eventually.True(t, wait, func() bool { return queueLen(t, setup, led) == 1 }, "the ledger back")
			if n := queueLen(t, setup, tokens); n != 0 {
				t.Fatalf("closed before commit: %d tokens, want 0", n)
			}
			if got := ledger(t, led); got != 0 {
				t.Fatalf("closed before commit: ledger %d, want 0", got)
			}
			mint(true)
			if n := queueLen(t, setup, tokens); n != 3 {
				t.Fatalf("committed: %d tokens, want 3", n)
			}
			eventually.True(t, wait, func() bool { return queueLen(t, setup, led) == 1 }, "one ledger")
			if got := ledger(t, led); got != 3 {
				t.Fatalf("committed: ledger %d, want 3", got)
			}
		})
	}
}

// TestLimitReconciledByConsumeNotDeclare: a producer's Declare of a
// limited queue mints nothing; a worker's Consume of it mints its Limit
// and Rate in the background.
func TestLimitReconciledByConsumeNotDeclare(t *testing.T) {
	q := limitedQueue(t, runtime.QueueClassic, 4, runtime.Rate{N: 6, Per: time.Minute})
	q.Kind = runtime.KindOf[job]()
	producer, worker := dial(t, rabbitmq.Options{}), dial(t, rabbitmq.Options{})
	if err := producer.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	if rabbitmq.Reconciles(producer, q.Name) {
		t.Fatal("a Declare started a reconcile of the queue's limits")
	}
	if err := worker.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	sub, err := worker.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	reconciled(t, q, worker)
	token, ledgerQ, rateToken, rateLedger, _ := limitQueuesOf(q)
	if got := ledger(t, ledgerQ); got != 4 {
		t.Fatalf("limit ledger = %d, want 4", got)
	}
	if got := ledger(t, rateLedger); got != 6 {
		t.Fatalf("rate ledger = %d, want 6", got)
	}
	eventually.True(t, wait, func() bool { return ready(t, token) == 4 && ready(t, rateToken) == 6 }, "4 limit and 6 rate tokens")
	if rabbitmq.Reconciles(producer, q.Name) {
		t.Fatal("the producer reconciles the queue's limits")
	}
}

// TestLimitConnectionLost: permits whose connection is lost give their
// tokens back at once; their Release then does nothing; the backend takes
// permits again over a new connection.
func TestLimitConnectionLost(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 3
			q := limitedQueue(t, typ, n, runtime.Rate{})
			token, ledgerQ := limitNames(q)
			b := dial(t, rabbitmq.Options{})
			var held []runtime.Permit
			for range n {
				held = append(held, acquire(t, b, q, ""))
			}
			if err := rabbitmq.DropLimitConnection(b); err != nil {
				t.Fatal(err)
			}
			eventually.True(t, wait, func() bool { return ready(t, token) == n }, "the lost permits' tokens back")
			for _, p := range held {
				p.Release()
			}
			for range n {
				defer acquire(t, b, q, "").Release()
			}
			if got := ready(t, token); got != 0 {
				t.Fatalf("%d tokens ready while %d are held, want 0: a lost permit's Release gave one back twice", got, n)
			}
			if got := ledger(t, ledgerQ); got != n {
				t.Fatalf("ledger = %d, want %d", got, n)
			}
		})
	}
}

// TestLimitQueueWithDeliveryLimit: a quorum limit queue that exists
// without x-delivery-limit (declared on RabbitMQ 3) is used as it is;
// on RabbitMQ 4, where it then has a delivery limit of 20, a warning
// says so and how to lift it.
func TestLimitQueueWithDeliveryLimit(t *testing.T) {
	q := limitedQueue(t, runtime.QueueQuorum, 2, runtime.Rate{})
	_, ledgerQ := limitNames(q)
	ch := rawChannel(t)
	if _, err := ch.QueueDeclare(ledgerQ, true, false, false, false, amqp.Table{"x-queue-type": "quorum"}); err != nil {
		t.Fatal(err)
	}
	logs := make(records, 64)
	b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
	for range 3 {
		acquire(t, b, q, "").Release()
	}
	reconciled(t, q, b)
	if got := ledger(t, ledgerQ); got != 2 {
		t.Fatalf("ledger = %d, want 2", got)
	}
	if !strings.HasPrefix(b.ServerVersion(), "4.") {
		return
	}
	for {
		select {
		case rec := <-logs:
			if rec.Level == slog.LevelWarn && strings.Contains(rec.Message, "delivery limit") {
				if got := attr(rec, "limit_queue"); got != ledgerQ {
					t.Fatalf("warning names %v, want %q", got, ledgerQ)
				}
				return
			}
		default:
			t.Fatal("no warning of the ledger's delivery limit")
		}
	}
}
