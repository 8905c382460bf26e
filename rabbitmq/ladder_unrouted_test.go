package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// unroutedGranularity is the granularity of the unrouted tests: a ladder
// of their own per type, deleted when each ends, so that no other test's
// waits share its unrouted queue.
const unroutedGranularity = 90 * time.Millisecond

// deleteLadderOf deletes every queue and exchange of l on a broker of
// version v.
func deleteLadderOf(l topology.Ladder, v topology.Version) {
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		return
	}
	defer conn.Close()
	var qs []string
	for _, q := range l.Queues(v) {
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

// ladderOf returns the stats of ladder l among ls.
func ladderOf(ls []admin.LadderStats, l topology.Ladder) (admin.LadderStats, bool) {
	i := slices.IndexFunc(ls, func(s admin.LadderStats) bool { return s.Name == l.Prefix() })
	if i < 0 {
		return admin.LadderStats{}, false
	}
	return ls[i], true
}

// TestLadderUnroutedRedrive: the waits of a ladder-mode queue deleted
// while they wait are counted in their ladder's unrouted queue and listed
// by the queue they were for; a re-drive while that queue is still
// missing leaves them and says so; once it is declared again a re-drive
// puts each back on it, without the broker's x-death headers, with its
// ID, priority and headers, and each job runs once.
func TestLadderUnroutedRedrive(t *testing.T) {
	for _, qt := range ladderTypes {
		t.Run(string(qt), func(t *testing.T) {
			t.Parallel()
			b := dial(t, rabbitmq.Options{Granularity: unroutedGranularity})
			v, _ := topology.ParseVersion(b.ServerVersion())
			l := topology.NewLadder(qt, unroutedGranularity, v)
			t.Cleanup(func() { deleteLadderOf(l, v) })
			name := queueName(t, ".other", ".other.dead")
			q, p := ladderQueue(t, b, qt, name)
			other, po := ladderQueue(t, b, qt, name+".other")

			const n = 3
			ids := make([]string, n)
			for i := range n {
				ids[i] = fmt.Sprintf("u-%d", i)
				if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithID(ids[i]), runtime.WithPriority(i+1),
					runtime.WithHeaders(map[string]string{"tenant": "t" + ids[i]}), runtime.WithDelay(5*unroutedGranularity)); err != nil {
					t.Fatal(err)
				}
			}
			// The other queue's wait goes unrouted too, and is left by a
			// re-drive that names q alone.
			if _, err := runtime.Enqueue(ctxT(t), po, other, job{N: 9}, runtime.WithID("o-1"), runtime.WithPriority(7), runtime.WithDelay(3*unroutedGranularity)); err != nil {
				t.Fatal(err)
			}
			ch := rawChannel(t)
			for _, name := range []string{q.Name, other.Name} {
				if _, err := ch.QueueDelete(name, false, false, false); err != nil {
					t.Fatalf("delete %q: %v", name, err)
				}
			}

			var ls []admin.LadderStats
			var lerr error
			eventually.True(t, 30*time.Second, func() bool {
				ls, lerr = b.Ladders(ctxT(t))
				st, ok := ladderOf(ls, l)
				return seen(lerr) && ok && st.Unrouted == n+1
			}, fmt.Sprintf("%d unrouted waits counted on %s", n+1, l.Prefix()))
			st, _ := ladderOf(ls, l)
			if st.QueueType != string(qt) || st.Granularity != unroutedGranularity || st.Levels != l.Levels || st.UnroutedQueue != l.Unrouted() {
				t.Errorf("ladder stats %+v, want type %s, granularity %v, %d levels, unrouted queue %q", st, qt, unroutedGranularity, l.Levels, l.Unrouted())
			}

			ws, err := b.UnroutedWaits(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{q.Name}})
			if err != nil && !errors.Is(err, admin.ErrCannotList) {
				t.Fatal(err)
			}
			var got []string
			for _, w := range ws {
				got = append(got, w.ID)
				if w.Queue != q.Name || w.QueueExists || w.Delay != 5*unroutedGranularity || w.Ladder != l.Prefix() || w.Kind != q.Kind || w.Attempt != 1 || w.Poison {
					t.Errorf("unrouted wait %+v: want queue %q not existing, delay %v, ladder %q, kind %q, attempt 1", w, q.Name, 5*unroutedGranularity, l.Prefix(), q.Kind)
				}
				if w.UnroutedAt.IsZero() || time.Since(w.UnroutedAt) > time.Minute {
					t.Errorf("unrouted wait %s: unrouted at %v, want the last few seconds", w.ID, w.UnroutedAt)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, ids) {
				t.Errorf("unrouted waits of %q: %q, want %q", q.Name, got, ids)
			}
			if all, err := b.UnroutedWaits(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{name + "*"}}); !seen(err) || len(all) != n+1 {
				t.Errorf("unrouted waits by the prefix %q: %d, %v; want %d", name+"*", len(all), err, n+1)
			}

			// Still missing: nothing moves, and the result names the queue.
			res, err := b.RedriveUnrouted(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{q.Name, "no-such-queue-" + name}}, nil)
			if !seen(err) {
				t.Fatal(err)
			}
			if len(res.Moved) != 0 || len(res.Stayed) != n || !slices.Equal(res.MissingQueues(), []string{q.Name}) {
				t.Errorf("re-drive onto a missing queue: moved %d, stayed %d (queues %q); want 0, %d, [%q]", len(res.Moved), len(res.Stayed), res.MissingQueues(), n, q.Name)
			}
			if !slices.Equal(res.Unmatched, []string{"no-such-queue-" + name}) {
				t.Errorf("unmatched %q, want the queue no wait was for", res.Unmatched)
			}
			// A quorum queue's count of what a scan kept (copies at its
			// tail) may lag the scan's end by a moment.
			eventually.True(t, 30*time.Second, func() bool {
				ls, err := b.Ladders(ctxT(t))
				st, _ := ladderOf(ls, l)
				return seen(err) && st.Unrouted == n+1
			}, fmt.Sprintf("%d unrouted kept after a re-drive onto a missing queue", n+1))

			// Declared again: each wait goes back, once, as it was.
			if err := b.Declare(ctxT(t), q); err != nil {
				t.Fatal(err)
			}
			res, err = b.RedriveUnrouted(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{q.Name}}, nil)
			if !seen(err) {
				t.Fatal(err)
			}
			if len(res.Moved) != n || len(res.Stayed) != 0 || len(res.Unmatched) != 0 {
				t.Fatalf("re-drive: %+v, want %d moved", res, n)
			}
			if c := queueLen(t, ch, q.Name); c != n {
				t.Fatalf("%q holds %d after the re-drive, want %d", q.Name, c, n)
			}
			eventually.True(t, 30*time.Second, func() bool {
				ls, err := b.Ladders(ctxT(t))
				st, _ := ladderOf(ls, l)
				return seen(err) && st.Unrouted == 1
			}, "1 unrouted (the other queue's) after the re-drive")

			// The other queue, declared again by hand, gets its wait as it
			// was published, without the headers the ladder added.
			if _, err := ch.QueueDeclare(other.Name, true, false, false, false, amqp.Table{topology.ArgQueueType: "classic"}); err != nil {
				t.Fatal(err)
			}
			res, err = b.RedriveUnrouted(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{other.Name}}, nil)
			if !seen(err) || len(res.Moved) != 1 {
				t.Fatalf("re-drive of the other queue: %+v, %v; want 1 moved", res, err)
			}
			m, ok, err := ch.Get(other.Name, true)
			if err != nil || !ok {
				t.Fatalf("get from %q: %v, %v", other.Name, ok, err)
			}
			for k := range m.Headers {
				if strings.HasPrefix(k, "x-") {
					t.Errorf("re-driven wait carries the header %q, want none the ladder added: %v", k, m.Headers)
				}
			}
			if m.MessageId != "o-1" || m.Priority != 7 || m.RoutingKey != other.Name {
				t.Errorf("re-driven wait: id %q, priority %d, routing key %q; want o-1, 7, %q", m.MessageId, m.Priority, m.RoutingKey, other.Name)
			}
			for _, name := range []string{q.Name, other.Name} {
				left, err := b.UnroutedWaits(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{name}})
				if !seen(err) || len(left) != 0 {
					t.Errorf("unrouted waits of %q left: %+v, %v; want none", name, left, err)
				}
			}

			var mu sync.Mutex
			runs := map[string]int{}
			runWorker(t, b, q, func(ctx context.Context, _ job) error {
				info, _ := runtime.InfoFromContext(ctx)
				mu.Lock()
				runs[info.ID]++
				mu.Unlock()
				if info.Headers["tenant"] != "t"+info.ID || info.Attempt != 1 {
					t.Errorf("job %s: headers %v, attempt %d; want its own tenant header and attempt 1", info.ID, info.Headers, info.Attempt)
				}
				return nil
			})
			eventually.True(t, 30*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(runs) == n && queueLen(t, ch, q.Name) == 0
			}, "every re-driven job run")
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if runs[id] != 1 {
					t.Errorf("job %s ran %d times, want once", id, runs[id])
				}
			}
		})
	}
}

// seen reports whether err is nil, or says only that the management API
// could not list the broker's queues: the ladders of the backend's
// granularity, which the tests use, are found without it.
func seen(err error) bool { return err == nil || errors.Is(err, admin.ErrCannotList) }

// TestLadderUnroutedNone: a re-drive that names a queue no unrouted wait
// was for moves nothing and says so, and a listing of it is empty.
func TestLadderUnroutedNone(t *testing.T) {
	b := dial(t, rabbitmq.Options{Granularity: ladderGranularity})
	name := "no-such-queue-" + queueName(t)
	l := topology.NewLadder(runtime.QueueClassic, ladderGranularity, topology.Version{})
	res, err := b.RedriveUnrouted(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{name}}, nil)
	if !seen(err) {
		t.Fatal(err)
	}
	if len(res.Moved) != 0 || len(res.Stayed) != 0 || !slices.Equal(res.Unmatched, []string{name}) {
		t.Errorf("re-drive of %q: %+v, want nothing moved and it unmatched", name, res)
	}
	ws, err := b.UnroutedWaits(ctxT(t), admin.UnroutedSelector{Ladders: []string{l.Prefix()}, Queues: []string{name}})
	if !seen(err) || len(ws) != 0 {
		t.Errorf("unrouted waits of %q: %v, %v; want none", name, ws, err)
	}
}
