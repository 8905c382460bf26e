package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

// ladderGranularity is the granularity of the ladder tests: short, so that
// waits of many granularities take a few seconds. Its ladders
// ("queuey.ladder.<type>.100ms.*") are shared by every test that uses it,
// like a ladder in production, and never deleted by a test.
const ladderGranularity = 100 * time.Millisecond

// ladderTypes are the queue types whose ladders each test runs on.
var ladderTypes = []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum}

// ladderQueue declares a ladder-mode queue of type qt named name (deleted
// with its dead-letter queue when t ends) on b.
func ladderQueue(t *testing.T, b *rabbitmq.Backend, qt runtime.QueueType, name string) (runtime.QueueConfig, *runtime.Producer) {
	t.Helper()
	q := runtime.DefaultQueueConfig(name)
	q.Kind = runtime.KindOf[job]()
	q.QueueType = qt
	q.Delay = runtime.DelayLadder
	t.Cleanup(func() { deleteQueues(name, name+".dead") })
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatalf("declare %q: %v", name, err)
	}
	return q, p
}

// arrival is a job's run: which, and when.
type arrival struct {
	n  int
	at time.Time
}

// arrivals collects the runs of a worker.
type arrivals struct {
	mu  sync.Mutex
	got []arrival
}

func (a *arrivals) handle(_ context.Context, j job) error {
	a.mu.Lock()
	a.got = append(a.got, arrival{j.N, time.Now()})
	a.mu.Unlock()
	return nil
}

func (a *arrivals) snapshot() []arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// observe binds a queue of its own (deleted when t ends) to exchange with
// key, and returns its deliveries: copies of what the exchange routes
// there, with their routing keys and headers.
func observe(t *testing.T, exchange, key string) <-chan amqp.Delivery {
	t.Helper()
	ch := rawChannel(t)
	name := queueName(t)
	if _, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{topology.ArgQueueType: "classic"}); err != nil {
		t.Fatalf("declare observer: %v", err)
	}
	if err := ch.QueueBind(name, key, exchange, false, nil); err != nil {
		t.Fatalf("bind observer to %q with %q: %v", exchange, key, err)
	}
	ds, err := ch.Consume(name, "", true, false, false, false, nil)
	if err != nil {
		t.Fatalf("consume observer: %v", err)
	}
	return ds
}

// orderSlack is how far apart two waits' due times must be for the test to
// require that they arrive in that order. Each level queue expires its
// messages on a timer of its own, so when the broker or this process
// stalls (seen on a loaded machine: half a second on every queue at once),
// waits due within the stall come out in the order their levels resume,
// late but never early.
const orderSlack = time.Second

// TestLadderWaitsInDueOrder: waits of many distinct delays, published in
// random order, each arrive no earlier than due, and in the order they are
// due (to within orderSlack; an inversion within it is logged).
func TestLadderWaitsInDueOrder(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			q, p := ladderQueue(t, b, qt, queueName(t))
			var a arrivals
			runWorker(t, b, q, a.handle)
			// Due 300ms apart at least, whatever order they are
			// published in; 1, 2, 3, 5 ... bits set.
			units := []int{1, 4, 7, 10, 13, 16, 19, 22, 25, 31, 34, 37}
			order := rand.Perm(len(units))
			due := make(map[int]time.Time, len(units))
			delay := make(map[int]time.Duration, len(units))
			for _, i := range order {
				d := time.Duration(units[i]) * ladderGranularity
				sent := time.Now()
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithDelay(d)); err != nil {
					t.Fatalf("Enqueue with delay %v: %v", d, err)
				}
				due[i], delay[i] = sent.Add(d), d
			}
			eventually.True(t, 30*time.Second, func() bool { return len(a.snapshot()) >= len(units) }, "every wait arrives")
			got := a.snapshot()
			if len(got) != len(units) {
				t.Fatalf("%d arrivals, want %d", len(got), len(units))
			}
			var late []string
			for k, r := range got {
				lateness := r.at.Sub(due[r.n])
				late = append(late, fmt.Sprintf("%v:+%v", delay[r.n], lateness.Round(time.Millisecond)))
				if lateness < -brokertest.ClockSlack(delay[r.n]) {
					t.Errorf("wait of %v arrived %v early", delay[r.n], -lateness)
				}
				for _, e := range got[:k] {
					switch {
					case due[e.n].After(due[r.n].Add(orderSlack)):
						t.Errorf("wait of %v (due %v) arrived after wait of %v (due %v)", delay[r.n], due[r.n].Format(time.StampMilli), delay[e.n], due[e.n].Format(time.StampMilli))
					case due[e.n].After(due[r.n]):
						t.Logf("wait of %v (due %v) arrived after wait of %v (due %v), within %v", delay[r.n], due[r.n].Format(time.StampMilli), delay[e.n], due[e.n].Format(time.StampMilli), orderSlack)
					}
				}
			}
			t.Logf("%s ladder lateness (delay:+late): %s", qt, strings.Join(late, " "))
		})
	}
}

// TestLadderExactRouting: of two queues, one named like the end of the
// other's name, each gets exactly its own waits.
func TestLadderExactRouting(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			short := queueName(t) + ".b"
			long := strings.Replace(short, "queuey-rmq-test.", "queuey-rmq-test.a.", 1) // ends with every word of short
			qs, ps := ladderQueue(t, b, qt, short)
			ql, pl := ladderQueue(t, b, qt, long)
			var as, al arrivals
			runWorker(t, b, qs, as.handle)
			runWorker(t, b, ql, al.handle)
			const each = 5
			for i := range each {
				d := time.Duration(1+i%3) * ladderGranularity
				if _, err := runtime.Enqueue(ctxT(t), ps, qs, job{N: i}, runtime.WithDelay(d)); err != nil {
					t.Fatal(err)
				}
				if _, err := runtime.Enqueue(ctxT(t), pl, ql, job{N: 100 + i}, runtime.WithDelay(d)); err != nil {
					t.Fatal(err)
				}
			}
			// A last wait each, due after the others: once it is in,
			// any copy of an earlier wait routed to the wrong queue
			// would be in too.
			if _, err := runtime.Enqueue(ctxT(t), ps, qs, job{N: 99}, runtime.WithDelay(5*ladderGranularity)); err != nil {
				t.Fatal(err)
			}
			if _, err := runtime.Enqueue(ctxT(t), pl, ql, job{N: 199}, runtime.WithDelay(5*ladderGranularity)); err != nil {
				t.Fatal(err)
			}
			has := func(a *arrivals, n int) bool {
				return slices.ContainsFunc(a.snapshot(), func(r arrival) bool { return r.n == n })
			}
			eventually.True(t, 30*time.Second, func() bool { return has(&as, 99) && has(&al, 199) }, "the last wait of each queue")
			for _, c := range []struct {
				name string
				a    *arrivals
				base int
			}{{short, &as, 0}, {long, &al, 100}} {
				var ns []int
				for _, r := range c.a.snapshot() {
					ns = append(ns, r.n)
				}
				slices.Sort(ns)
				want := []int{c.base, c.base + 1, c.base + 2, c.base + 3, c.base + 4, c.base + 99}
				if !slices.Equal(ns, want) {
					t.Errorf("queue %q ran %v, want %v", c.name, ns, want)
				}
			}
		})
	}
}

// TestLadderRetryKeyFixed: a job retried 50 times goes through the ladder
// each time with a key built afresh from that retry's delay: of one
// length, never grown, carrying no x-death of its earlier waits.
func TestLadderRetryKeyFixed(t *testing.T) {
	b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	q.Delay = runtime.DelayLadder
	q.MaxAttempts = 50
	// Retries wait 1 to 4 granularities, so the keys differ in their bits.
	q.RetryBase, q.RetryMax = ladderGranularity, 4*ladderGranularity
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	l := topology.NewLadder(runtime.QueueClassic, ladderGranularity, topology.Version{})
	copies := observe(t, l.Deliver(), l.QueueBinding(q.Name).Key)
	runWorker(t, b, q, func(context.Context, job) error { return errors.New("fails every time") })
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	_, want, err := l.Wait(q.Name, ladderGranularity, 0)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i := range q.MaxAttempts - 1 {
		d := within(t, copies, fmt.Sprintf("retry %d", i+1))
		keys[d.RoutingKey] = true
		if len(d.RoutingKey) != len(want) || !strings.HasSuffix(d.RoutingKey, "."+q.Name) {
			t.Errorf("retry %d: routing key %q (%d bytes), want %d bytes ending in the queue's name", i+1, d.RoutingKey, len(d.RoutingKey), len(want))
		}
		// The broker takes the BCC header of the wait's way in off it.
		for _, h := range []string{"BCC", "CC"} {
			if v, ok := d.Headers[h]; ok {
				t.Errorf("retry %d: header %s = %v, want none", i+1, h, v)
			}
		}
		// A wait of 1 to 4 granularities passes one or two levels.
		if deaths, _ := d.Headers["x-death"].([]any); len(deaths) < 1 || len(deaths) > 2 {
			t.Errorf("retry %d: %d x-death entries, want 1 or 2 (the levels it passed): %v", i+1, len(deaths), d.Headers["x-death"])
		}
	}
	if len(keys) < 2 {
		t.Errorf("%d distinct keys over %d retries of 1 to 4 granularities, want more than one", len(keys), q.MaxAttempts-1)
	}
	ch := rawChannel(t)
	eventually.True(t, 60*time.Second, func() bool { return queueLen(t, ch, q.Name+".dead") == 1 }, "the job dead after its last attempt")
}

// TestLadderQueueGone: a wait whose queue was deleted while it waited
// lands in the ladder's unrouted queue, and another queue's waits through
// the same levels arrive on time meanwhile.
func TestLadderQueueGone(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			gone, pg := ladderQueue(t, b, qt, queueName(t)+".gone")
			kept, pk := ladderQueue(t, b, qt, queueName(t)+".kept")
			l := topology.NewLadder(qt, ladderGranularity, topology.Version{})
			unrouted := observe(t, l.Unrouted(), "")
			var a arrivals
			runWorker(t, b, kept, a.handle)

			// 20 granularities, levels 4 and 2: due well after the queue
			// is deleted, even on a loaded machine.
			if _, err := runtime.Enqueue(ctxT(t), pg, gone, job{N: 1}, runtime.WithDelay(20*ladderGranularity)); err != nil {
				t.Fatal(err)
			}
			if _, err := rawChannel(t).QueueDelete(gone.Name, false, false, false); err != nil {
				t.Fatalf("delete %q: %v", gone.Name, err)
			}
			due := map[int]time.Time{}
			for i, units := range []int{5, 5, 7, 9, 13} {
				d := time.Duration(units) * ladderGranularity
				sent := time.Now()
				if _, err := runtime.Enqueue(ctxT(t), pk, kept, job{N: i}, runtime.WithDelay(d)); err != nil {
					t.Fatal(err)
				}
				due[i] = sent.Add(d)
			}
			var lost amqp.Delivery
			for lost.RoutingKey == "" {
				d := within(t, unrouted, "the wait of the deleted queue in the unrouted queue")
				if name, ok := l.KeyQueue(d.RoutingKey); ok && name == gone.Name {
					lost = d
				}
			}
			eventually.True(t, 30*time.Second, func() bool { return len(a.snapshot()) >= len(due) }, "the other queue's waits")
			var late []string
			for _, r := range a.snapshot() {
				lateness := r.at.Sub(due[r.n])
				late = append(late, "+"+lateness.Round(time.Millisecond).String())
				if lateness < 0 || lateness > 5*time.Second {
					t.Errorf("wait %d arrived %v after due, want 0..5s", r.n, lateness)
				}
			}
			t.Logf("%s ladder, beside an unrouted wait, lateness: %s", qt, strings.Join(late, " "))
		})
	}
}

// TestLadderRefusals: a wait too long is refused before anything is
// published, as in the other modes, and a name too long for a ladder key
// is refused at Declare.
func TestLadderRefusals(t *testing.T) {
	b := dial(t, rabbitmq.Options{Granularity: ladderGranularity, Delay: runtime.DelayLadder})
	q, p := jobQueue(t, b)
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithDelay(runtime.MaxDeferral+time.Second)); !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("wait above MaxDeferral: %v, want ErrDelayTooLong", err)
	}
	long := runtime.DefaultQueueConfig(strings.Repeat("q", 206)) // 255 - 2*25 + 1
	err := b.Declare(ctxT(t), long)
	if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), "at most 205 bytes") {
		t.Errorf("Declare of a 206-byte name in ladder mode at 100ms: %v, want ErrInvalidConfig saying at most 205 bytes", err)
	}
}

// ladderMaxName is the longest ladder-mode queue name at the default
// granularity: 255 bytes less 22 words of one bit.
const ladderMaxName = 211

// TestConformanceLadder runs the suite's wait cases on classic queues with
// their waits on the classic ladder.
func TestConformanceLadder(t *testing.T) {
	requireBroker(t)
	backendtest.Run(t, backendtest.Features{Delay: runtime.DelayLadder, OnlyWaits: true, MaxQueueNameLen: ladderMaxName, PublishRaw: publishRawTo}, newCleaningBackend)
}

// TestConformanceLadderQuorum runs the suite's wait cases on quorum queues
// with their waits on the quorum ladder, with the quorum features of
// TestConformanceQuorum.
func TestConformanceLadderQuorum(t *testing.T) {
	requireBroker(t)
	f := backendtest.Features{QueueType: runtime.QueueQuorum, Delay: runtime.DelayLadder, OnlyWaits: true, MaxQueueNameLen: ladderMaxName, CoarsePriority: true, DeferAheadSlack: 1, PublishRaw: publishRawTo}
	if !dial(t, rabbitmq.Options{}).QuorumPriorities() {
		f.NoPriorityOrder = true
	}
	backendtest.Run(t, f, newCleaningBackend)
}

// TestLadderGone: a ladder deleted under a running backend (every level
// queue and the delivery exchange, whose bindings go with it) is declared
// again by the first wait that finds its level gone, and every
// ladder-mode queue of the backend is bound again, not only the one that
// waited: both queues' waits arrive, none in the unrouted queue. It runs
// on a ladder of a granularity of its own, which it deletes at the end.
func TestLadderGone(t *testing.T) {
	const g = 7 * time.Millisecond
	l := topology.NewLadder(runtime.QueueClassic, g, topology.Version{})
	deleteLadder := func() {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			return
		}
		defer conn.Close()
		var qs []string
		for level := range l.Levels {
			qs = append(qs, l.Level(level))
		}
		deleteQueues(append(qs, l.Unrouted())...)
		for _, x := range l.Exchanges() {
			if ch, err := conn.Channel(); err == nil {
				_ = ch.ExchangeDelete(x.Name, false, false)
				ch.Close()
			}
		}
	}
	t.Cleanup(deleteLadder)
	b := dial(t, rabbitmq.Options{Granularity: g})
	name := queueName(t, ".other", ".other.dead")
	q, p := ladderQueue(t, b, runtime.QueueClassic, name)
	other, po := ladderQueue(t, b, runtime.QueueClassic, name+".other")
	var a, ao arrivals
	runWorker(t, b, q, a.handle)
	runWorker(t, b, other, ao.handle)

	deleteLadder()
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithDelay(8*g)); err != nil {
		t.Fatalf("wait through the deleted ladder: %v, want it declared again and the wait held", err)
	}
	if _, err := runtime.Enqueue(ctxT(t), po, other, job{N: 2}, runtime.WithDelay(8*g)); err != nil {
		t.Fatalf("wait onto the other queue: %v", err)
	}
	eventually.True(t, 30*time.Second, func() bool { return len(a.snapshot()) == 1 && len(ao.snapshot()) == 1 },
		"both queues' waits through the ladder declared again")
	if n := queueLen(t, rawChannel(t), l.Unrouted()); n != 0 {
		t.Errorf("%d waits in %q, want 0: the other queue was not bound again", n, l.Unrouted())
	}
}

// TestLadderEnterGone: on a ladder without its enter exchange, as a
// version of the workers that published through the level exchanges
// declared it, the first wait declares the ladder again, enter exchange
// and bindings included, and arrives; nothing goes to the unrouted queue.
// It runs on a ladder of a granularity of its own, which it deletes at the
// end.
func TestLadderEnterGone(t *testing.T) {
	const g = 11 * time.Millisecond
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			b := dial(t, rabbitmq.Options{Granularity: g})
			v, _ := topology.ParseVersion(b.ServerVersion())
			l := topology.NewLadder(qt, g, v)
			t.Cleanup(func() { deleteLadder(l) })
			q, p := ladderQueue(t, b, qt, queueName(t))
			var a arrivals
			runWorker(t, b, q, a.handle)
			if err := rawChannel(t).ExchangeDelete(l.EnterExchange(), false, false); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithDelay(time.Duration(5+i)*g)); err != nil {
					t.Fatalf("wait %d without the enter exchange: %v, want the ladder declared again and the wait held", i, err)
				}
			}
			eventually.True(t, 30*time.Second, func() bool { return len(a.snapshot()) == 3 }, "the waits through the ladder declared again")
			if n := queueLen(t, rawChannel(t), l.Unrouted()); n != 0 {
				t.Errorf("%d waits in %q, want 0", n, l.Unrouted())
			}
		})
	}
}

// deleteLadder deletes l's queues and exchanges.
func deleteLadder(l topology.Ladder) {
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		return
	}
	defer conn.Close()
	var qs []string
	for _, q := range l.Queues(topology.Version{Major: 4}) {
		qs = append(qs, q.Name)
	}
	deleteQueues(qs...)
	for _, x := range l.Exchanges() {
		if ch, err := conn.Channel(); err == nil {
			_ = ch.ExchangeDelete(x.Name, false, false)
			ch.Close()
		}
	}
}

// TestLadderStatsSayUncounted: the stats of a ladder-mode queue say that
// its waits cannot be counted, rather than counting none.
func TestLadderStatsSayUncounted(t *testing.T) {
	b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
	q, _ := ladderQueue(t, b, runtime.QueueClassic, queueName(t))
	stats, err := b.QueueStats(ctxT(t), admin.QueueOf(q))
	if err != nil {
		t.Fatal(err)
	}
	st := stats[0]
	if !slices.ContainsFunc(st.Missing, func(m string) bool { return strings.Contains(m, "delay ladder") }) {
		t.Errorf("stats of a ladder-mode queue: Missing = %q, want it to say the ladder's waits are not counted", st.Missing)
	}
}

// TestLadderTargetWaits: a backend that waits onto a ladder-mode queue
// declared by another (TargetWaits) gets the ladder and the queue's
// binding, and its waits arrive.
func TestLadderTargetWaits(t *testing.T) {
	owner := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
	q, _ := ladderQueue(t, owner, runtime.QueueQuorum, queueName(t))
	other := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
	if err := other.TargetWaits(ctxT(t), q); err != nil {
		t.Fatalf("TargetWaits: %v", err)
	}
	env := &runtime.Envelope{ID: "t1", Queue: q.Name, Kind: q.Kind, Attempt: 1, MaxAttempts: q.MaxAttempts, EnqueuedAt: time.Now(), Payload: []byte(`{"N":7}`)}
	if err := other.Publish(ctxT(t), env, 3*ladderGranularity); err != nil {
		t.Fatalf("wait from the other backend: %v", err)
	}
	ch := rawChannel(t)
	eventually.True(t, 30*time.Second, func() bool { return queueLen(t, ch, q.Name) == 1 }, "the wait published by the other backend on its queue")
}
