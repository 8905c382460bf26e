package rabbitmq_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// scaleGranularity is the granularity of the tests at the product's
// scale: 1,000 distinct waits of 1 to 1,000 granularities span 10 s. Its
// ladders ("queuey.ladder.<type>.10ms.*") are shared like the others.
const scaleGranularity = 10 * time.Millisecond

// goneGranularity is that of TestLadderThousandWaitsQueueGone's ladders,
// its own.
const goneGranularity = 11 * time.Millisecond

// scaleWaits is how many distinct waits a scale test holds on a queue.
const scaleWaits = 1000

// scaleOrderSlack is how far apart two of the scale tests' waits must be
// due, beyond the run's own p99 lateness, for the test to require that
// they arrive in that order. Each level queue expires its messages on a
// timer of its own, so when the machine stalls, every wait due within the
// stall is late and they leave in the order their levels resume (on a
// machine loaded 10 times over its cores: a p99 lateness of 5s, and
// inversions as long). A wait held behind another, as a queue of mixed
// TTLs would hold it, stands out from the run's lateness by the other's
// remaining TTL.
const scaleOrderSlack = 2 * time.Second

// lateness summarises how late waits arrived: p50, p99 and max.
func lateness(ls []time.Duration) string {
	if len(ls) == 0 {
		return "none"
	}
	s := slices.Clone(ls)
	slices.Sort(s)
	at := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p99 %v, max %v (n=%d)", at(0.50), at(0.99), s[len(s)-1].Round(time.Millisecond), len(s))
}

// enqueueWaits enqueues one job N = base+i for each delay[i], in random order,
// from a few goroutines at once, and returns when each was due: its
// delay after the enqueue began.
func enqueueWaits(t *testing.T, p *runtime.Producer, q runtime.QueueConfig, base int, delay []time.Duration, opts ...runtime.EnqueueOption) []time.Time {
	t.Helper()
	due := make([]time.Time, len(delay))
	order := rand.Perm(len(delay))
	const senders = 8
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for s := range senders {
		wg.Go(func() {
			for k := s; k < len(order); k += senders {
				i := order[k]
				sent := time.Now()
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: base + i}, append(opts, runtime.WithDelay(delay[i]))...); err != nil {
					errs <- fmt.Errorf("enqueue with delay %v: %w", delay[i], err)
					return
				}
				due[i] = sent.Add(delay[i])
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return due
}

// checkArrivals checks that each of the len(due) jobs ran once at least,
// none before it was due, and in due order to within slack plus the run's
// p99 lateness, and returns their lateness.
func checkArrivals(t *testing.T, got []arrival, due []time.Time, slack time.Duration) []time.Duration {
	t.Helper()
	slices.SortStableFunc(got, func(a, b arrival) int { return a.at.Compare(b.at) })
	var first []arrival // each job's first run, in arrival order
	seen := make(map[int]bool, len(due))
	for _, r := range got {
		if !seen[r.n] { // at least once: a copy may run twice
			seen[r.n] = true
			first = append(first, r)
		}
	}
	if len(seen) != len(due) {
		t.Errorf("%d of %d jobs arrived", len(seen), len(due))
	}
	late := make([]time.Duration, 0, len(first))
	for _, r := range first {
		l := r.at.Sub(due[r.n])
		late = append(late, l)
		if l < 0 {
			t.Errorf("job %d arrived %v before due", r.n, -l)
		}
	}
	if len(late) == 0 {
		return late
	}
	sorted := slices.Clone(late)
	slices.Sort(sorted)
	slack += max(sorted[len(sorted)*99/100], 0)
	var latest time.Time // the latest due time of what arrived so far
	inversions := 0
	for _, r := range first {
		if latest.After(due[r.n].Add(slack)) {
			t.Errorf("job %d, due %v, arrived after a job due %v, more than %v later", r.n, due[r.n].Format(time.StampMilli), latest.Format(time.StampMilli), slack.Round(time.Millisecond))
		} else if latest.After(due[r.n]) {
			inversions++
		}
		if due[r.n].After(latest) {
			latest = due[r.n]
		}
	}
	if inversions > 0 {
		t.Logf("%d jobs arrived after one due later, within %v", inversions, slack.Round(time.Millisecond))
	}
	return late
}

// distinctDelays returns n distinct delays of from..from+n-1 granularities.
func distinctDelays(n, from int, g time.Duration) []time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		d[i] = time.Duration(from+i) * g
	}
	return d
}

// scaleQueue declares a ladder-mode queue of type qt for the scale tests,
// consumed wide enough that a handler never holds a wait back.
func scaleQueue(t *testing.T, b *rabbitmq.Backend, qt runtime.QueueType, name string) (runtime.QueueConfig, *runtime.Producer) {
	t.Helper()
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.QueueType, q.Delay = runtime.KindOf[job](), qt, runtime.DelayLadder
	q.Prefetch, q.Concurrency = 500, 100
	t.Cleanup(func() { deleteQueues(name, name+".dead") })
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatalf("declare %q: %v", name, err)
	}
	return q, p
}

// TestLadderThousandWaits: 1,000 distinct waits (10ms to 10s at a 10ms
// granularity) published in random order each run once, none before it is
// due, in due order (checkArrivals). The queue types run one
// after the other, so that the waits of one do not slow the other's.
func TestLadderThousandWaits(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			b := dial(t, rabbitmq.Options{Granularity: scaleGranularity})
			q, p := scaleQueue(t, b, qt, queueName(t))
			var a arrivals
			runWorker(t, b, q, a.handle)
			due := enqueueWaits(t, p, q, 0, distinctDelays(scaleWaits, 1, scaleGranularity))
			eventually.True(t, 2*time.Minute, func() bool { return len(a.snapshot()) >= scaleWaits }, "1,000 waits")
			late := checkArrivals(t, a.snapshot(), due, scaleOrderSlack)
			t.Logf("%s ladder at %v, %d distinct waits: lateness %s", qt, scaleGranularity, scaleWaits, lateness(late))
		})
	}
}

// TestLadderThousandWaitsQueueGone: a queue deleted while 1,000 waits for
// it are on the ladder stalls nothing: another queue's 1,000 waits through
// the same levels all arrive (a level held up behind a wait whose queue
// is gone would hold every wait after it for ever), none early, in due
// order, and all 1,000 of the deleted queue's land in the ladder's
// unrouted queue.
func TestLadderThousandWaitsQueueGone(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			// A ladder of its own, deleted when the test ends: the deleted
			// queue's 1,000 waits are left in its unrouted queue.
			b := dial(t, rabbitmq.Options{Granularity: goneGranularity})
			v, _ := topology.ParseVersion(b.ServerVersion())
			l := topology.NewLadder(qt, goneGranularity, v)
			t.Cleanup(func() { deleteLadderOf(l, v) })
			gone, pg := scaleQueue(t, b, qt, queueName(t)+".gone")
			kept, pk := scaleQueue(t, b, qt, queueName(t)+".kept")
			unrouted := observe(t, l.Unrouted(), "") // declared with the first queue
			var a arrivals
			runWorker(t, b, kept, a.handle)

			// The deleted queue's waits are due from 5s on, well after it is
			// deleted; the other's from 10ms, through the same levels.
			start := time.Now()
			enqueueWaits(t, pg, gone, 0, distinctDelays(scaleWaits, 500, goneGranularity))
			if _, err := rawChannel(t).QueueDelete(gone.Name, false, false, false); err != nil {
				t.Fatalf("delete %q: %v", gone.Name, err)
			}
			if took := time.Since(start); took >= 500*goneGranularity {
				t.Fatalf("publishing the waits and deleting their queue took %v, past the first one's due time: the test proves nothing", took)
			}
			due := enqueueWaits(t, pk, kept, 0, distinctDelays(scaleWaits, 1, goneGranularity))

			ids := map[string]bool{}
			for len(ids) < scaleWaits {
				d := within(t, unrouted, fmt.Sprintf("wait %d of the deleted queue in the unrouted queue", len(ids)+1))
				if name, ok := l.KeyQueue(d.RoutingKey); ok && name == gone.Name {
					ids[d.MessageId] = true
				}
			}
			eventually.True(t, 2*time.Minute, func() bool { return len(a.snapshot()) >= scaleWaits }, "the other queue's 1,000 waits")
			late := checkArrivals(t, a.snapshot(), due, scaleOrderSlack)
			t.Logf("%s ladder at %v: %d waits of the deleted queue unrouted; the other queue's %d waits: lateness %s", qt, goneGranularity, len(ids), scaleWaits, lateness(late))
		})
	}
}

// TestLadderEmptyWords: queue names with empty words (two dots in a row,
// a trailing dot, a leading dot) and names that end like one another each
// take exactly their own waits: a binding key's empty word matches only an
// empty word.
func TestLadderEmptyWords(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			base := queueName(t)
			names := []string{base + ".b", base + "..b", base + ".a..b", base + ".a.b", base + ".b.", "." + base + ".b", base + "...b"}
			type target struct {
				q runtime.QueueConfig
				p *runtime.Producer
				a *arrivals
			}
			var ts []target
			for _, name := range names {
				q, p := ladderQueue(t, b, qt, name)
				a := &arrivals{}
				runWorker(t, b, q, a.handle)
				ts = append(ts, target{q, p, a})
			}
			const each = 3
			for k, tg := range ts {
				for i := range each {
					if _, err := runtime.Enqueue(ctxT(t), tg.p, tg.q, job{N: 100*k + i}, runtime.WithDelay(time.Duration(1+i)*ladderGranularity)); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The last wait of each is due after the others: once it is in,
			// a copy routed to the wrong queue would be in too.
			for k, tg := range ts {
				if _, err := runtime.Enqueue(ctxT(t), tg.p, tg.q, job{N: 100*k + 99}, runtime.WithDelay(5*ladderGranularity)); err != nil {
					t.Fatal(err)
				}
			}
			eventually.True(t, 30*time.Second, func() bool {
				for k, tg := range ts {
					if !slices.ContainsFunc(tg.a.snapshot(), func(r arrival) bool { return r.n == 100*k+99 }) {
						return false
					}
				}
				return true
			}, "the last wait of each queue")
			for k, tg := range ts {
				var ns []int
				for _, r := range tg.a.snapshot() {
					ns = append(ns, r.n)
				}
				slices.Sort(ns)
				want := []int{100 * k, 100*k + 1, 100*k + 2, 100*k + 99}
				if !slices.Equal(ns, want) {
					t.Errorf("queue %q ran %v, want %v", tg.q.Name, ns, want)
				}
			}
		})
	}
}

// TestLadderPriorityExpiry: on a level shared by waits of normal and high
// priority, a normal one leaves when it is due, ahead of high ones
// entered after it, and each reaches its queue at its own priority. On
// RabbitMQ 4.x a quorum queue delivers, and so expires, its high-priority
// messages first: a level holding both would hold the normal wait until
// the high ones expire.
func TestLadderPriorityExpiry(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			q, p := ladderQueue(t, b, qt, queueName(t))
			l := topology.NewLadder(qt, ladderGranularity, topology.Version{})
			copies := observe(t, l.Deliver(), l.QueueBinding(q.Name).Key)
			const units = 32 // one level: 3.2s
			const gap = 2 * time.Second
			normalDue := time.Now().Add(units * ladderGranularity)
			if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 0}, runtime.WithDelay(units*ladderGranularity)); err != nil {
				t.Fatal(err)
			}
			// The high-priority waits enter the level while the normal one
			// waits there, due gap after it.
			<-time.After(gap)
			for i := 1; i <= 3; i++ {
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithDelay(units*ladderGranularity), runtime.WithPriority(9)); err != nil {
					t.Fatal(err)
				}
			}
			var prios []uint8
			for i := range 4 {
				d := within(t, copies, fmt.Sprintf("wait %d", i+1))
				if d.Priority == 0 {
					t.Logf("%s ladder: the normal-priority wait left its level %v after due", qt, time.Since(normalDue).Round(time.Millisecond))
				}
				prios = append(prios, d.Priority)
			}
			if want := []uint8{0, 9, 9, 9}; !slices.Equal(prios, want) {
				t.Errorf("%s ladder: waits reached their queue at priorities %v, want %v: the normal one, due %v before the others, left after them", qt, prios, want, gap)
			}
		})
	}
}

// TestLadderModeSwitch: waits held by one backend in one delay mode still
// arrive, none early and none lost, after the queue is run by a backend in
// another mode and the first is gone: classic hold queues (whose expiry
// nothing renews any more) and quorum rungs to the ladder, and the ladder
// to hold queues.
func TestLadderModeSwitch(t *testing.T) {
	for _, c := range []struct {
		name     string
		qt       runtime.QueueType
		from, to runtime.DelayMode
	}{
		{"classic-queue-to-ladder", runtime.QueueClassic, runtime.DelayQueue, runtime.DelayLadder},
		{"classic-ladder-to-queue", runtime.QueueClassic, runtime.DelayLadder, runtime.DelayQueue},
		{"quorum-rungs-to-default", runtime.QueueQuorum, runtime.DelayQueue, ""},
		{"quorum-default-to-rungs", runtime.QueueQuorum, "", runtime.DelayQueue},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			name := queueName(t)
			const jobs = 10
			delays := make([]time.Duration, jobs)
			for i := range delays {
				delays[i] = time.Duration(5+5*i) * ladderGranularity // 0.5s .. 5s
			}
			if c.qt == runtime.QueueQuorum {
				// Quorum hold queues never expire: delete the ones used.
				t.Cleanup(func() { deleteQueues(topology.Names{}.QuorumHolds(name, ladderGranularity)...) })
			}
			config := func(mode runtime.DelayMode) runtime.QueueConfig {
				q := runtime.DefaultQueueConfig(name)
				q.Kind, q.QueueType, q.Delay = runtime.KindOf[job](), c.qt, mode
				if c.qt == runtime.QueueQuorum {
					q.MaxPriority = runtime.NoPriority
				}
				return q
			}
			old := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			qOld := config(c.from)
			pOld, err := runtime.NewProducer(ctxT(t), old, qOld)
			if err != nil {
				t.Fatal(err)
			}
			dueOld := enqueueWaits(t, pOld, qOld, 0, delays)
			if err := old.Close(); err != nil {
				t.Fatalf("close the first backend: %v", err)
			}

			b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
			q := config(c.to)
			p, err := runtime.NewProducer(ctxT(t), b, q)
			if err != nil {
				t.Fatalf("declare in mode %q after %q: %v", c.to, c.from, err)
			}
			var a arrivals
			runWorker(t, b, q, a.handle)
			dueNew := enqueueWaits(t, p, q, jobs, delays)
			eventually.True(t, time.Minute, func() bool { return len(a.snapshot()) >= 2*jobs }, "the waits of both modes")
			due := append(dueOld, dueNew...)
			got := a.snapshot()
			late := checkArrivals(t, got, due, orderSlack)
			t.Logf("%s: lateness %s", c.name, lateness(late))
			if c.qt == runtime.QueueQuorum && c.to == "" {
				st, err := b.QueueStats(ctxT(t), admin.QueueOf(q))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(st[0].Missing, func(m string) bool { return strings.Contains(m, "delay ladder") }) {
					t.Errorf("stats of a quorum queue of the default mode: Missing = %q, want it on the ladder", st[0].Missing)
				}
			}
		})
	}
}
