package rabbitmq_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// limitQueues makes by hand, on connections of its own, the queues that
// hold queue q's global limits as the names of the limits' design have
// them, in a known state, and deletes them when t ends:
//
//   - Limit: 2 tokens, both held (unacked by a consumer cancelled once
//     it got its token, which a quorum queue still counts among its
//     consumers), 2 jobs waiting (consumers of the token queue);
//   - Rate 3/m: 1 token ready, 2 waiting out their minute in the return
//     queue;
//   - keys: key "a" held (its lease message unacked by the active
//     consumer of its single-active-consumer queue) with 2 more
//     consumers waiting; a hashed key idle (its lease message ready, no
//     consumer); and "queuey.lease.key.<n+2>.<q>.b.c", the key "c" of queue
//     "<q>.b", which is not q's.
//
// Each queue is of type typ. It returns the state LimitStates should
// read for q.
func limitQueues(t *testing.T, q string, typ runtime.QueueType) admin.LimitState {
	t.Helper()
	sum := sha256.Sum256([]byte("a key with spaces"))
	n := strconv.Itoa(len(q))
	hashed := "queuey.lease.key." + n + "." + q + ".x." + hex.EncodeToString(sum[:16])
	names := []string{
		"queuey.limit." + q, "queuey.limit-ledger." + q,
		"queuey.rate." + q, "queuey.rate-ledger." + q, "queuey.rate-m." + q,
		"queuey.lease.key." + n + "." + q + ".a", hashed, "queuey.lease.key." + strconv.Itoa(len(q)+2) + "." + q + ".b.c",
	}
	t.Cleanup(func() {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range names {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(n, false, false, false)
				ch.Close()
			}
		}
	})
	ch := rawChannel(t)
	declare := func(name string, args amqp.Table) {
		t.Helper()
		if args == nil {
			args = amqp.Table{}
		}
		args["x-queue-type"] = string(typ)
		if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
			t.Fatalf("declare %s: %v", name, err)
		}
	}
	publish := func(name, body string, n int) {
		t.Helper()
		for range n {
			if err := ch.PublishWithContext(ctxT(t), "", name, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte(body)}); err != nil {
				t.Fatalf("publish to %s: %v", name, err)
			}
		}
	}
	limit, rate := "queuey.limit."+q, "queuey.rate."+q
	declare(limit, nil)
	declare(names[1], nil)
	declare(rate, nil)
	declare(names[3], nil)
	declare(names[4], amqp.Table{"x-message-ttl": int64(time.Minute / time.Millisecond), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": rate})
	sac := amqp.Table{"x-single-active-consumer": true}
	for _, n := range names[5:] {
		declare(n, sac)
	}
	publish(limit, "token", 2)
	publish(names[1], "2", 1)
	publish(rate, "token", 1)
	publish(names[3], "3", 1)
	publish(names[4], "token", 2)
	for _, n := range names[5:] {
		publish(n, "", 1)
	}
	// Wait until the publishes are in, by a passive declare of each.
	eventually.Nil(t, wait, func() error {
		if n := queueLen(t, ch, limit); n != 2 {
			return fmt.Errorf("%s holds %d, want 2", limit, n)
		}
		if n := queueLen(t, ch, names[4]); n != 2 {
			return fmt.Errorf("%s holds %d, want 2", names[4], n)
		}
		return nil
	}, "the limit's queues filled")

	// Two jobs hold the Limit's tokens, as a worker takes one: consume
	// with prefetch 1, cancel the consumer once a token came. Two more
	// wait for one.
	for i := range 2 {
		c := rawChannel(t)
		if err := c.Qos(1, 0, false); err != nil {
			t.Fatal(err)
		}
		tag := fmt.Sprintf("holder-%d", i)
		d, err := c.Consume(limit, tag, false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		within(t, d, "a token")
		if err := c.Cancel(tag, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		c := rawChannel(t)
		if _, err := c.Consume(limit, fmt.Sprintf("waiting-%d", i), false, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Key "a" is held by the first of three consumers.
	key := names[5]
	var got <-chan amqp.Delivery
	for i := range 3 {
		c := rawChannel(t)
		if err := c.Qos(1, 0, false); err != nil {
			t.Fatal(err)
		}
		d, err := c.Consume(key, "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			got = d
		}
	}
	within(t, got, "the key's lease")
	return admin.LimitState{
		Queue: q, Limit: 2, InUse: 2, Waiting: 2,
		Rate: runtime.Rate{N: 3, Per: time.Minute}, RateReady: 1, RateWaiting: 0,
		KeysHeld: 1, KeysWaiting: 2,
	}
}

// TestLimitStates: the global limits' state is read from the queues that
// hold them, for the queues asked for and, asked for none, for every
// limited queue found by its queues' names; a queue without limits is
// left out; without the management API it is admin.ErrCannotList. The
// queues that hold the limits are classic or quorum, as the limited
// queue is.
func TestLimitStates(t *testing.T) {
	for _, typ := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(typ), func(t *testing.T) { testLimitStates(t, typ) })
	}
}

func testLimitStates(t *testing.T, typ runtime.QueueType) {
	b := dial(t, rabbitmq.Options{})
	q := queueName(t)
	want := limitQueues(t, q, typ)
	cfg := runtime.QueueConfig{Name: q, Limit: 5, Rate: runtime.Rate{N: 3, Per: time.Minute}, LimitKey: "Customer"}
	plain := runtime.QueueConfig{Name: q + ".plain"}

	eventually.Nil(t, wait, func() error {
		got, err := b.LimitStates(ctxT(t), []runtime.QueueConfig{plain, cfg})
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] != want {
			return fmt.Errorf("LimitStates of the queue = %+v, want [%+v]", got, want)
		}
		return nil
	}, "the limits' state of the queue asked for")

	all, err := b.LimitStates(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(all, func(s admin.LimitState) bool { return s.Queue == q }); i < 0 || all[i] != want {
		t.Errorf("LimitStates of every queue: %+v, want %+v among them", all, want)
	}
	if i := slices.IndexFunc(all, func(s admin.LimitState) bool { return s.Queue == q+".b" }); i < 0 || all[i] != (admin.LimitState{Queue: q + ".b"}) {
		t.Errorf("LimitStates of every queue: %+v, want the idle key of %q among them", all, q+".b")
	}
	if !slices.IsSortedFunc(all, func(a, b admin.LimitState) int { return strings.Compare(a.Queue, b.Queue) }) {
		t.Errorf("LimitStates of every queue are not sorted by name: %+v", all)
	}

	off := dial(t, rabbitmq.Options{ManagementURL: rabbitmq.ManagementOff})
	if got, err := off.LimitStates(ctxT(t), []runtime.QueueConfig{cfg}); !errors.Is(err, admin.ErrCannotList) || got != nil {
		t.Errorf("LimitStates without the management API = %+v, %v; want ErrCannotList", got, err)
	}
}

// TestLimitStatesOfPermits: LimitStates reads the limits as workers hold
// them through AcquirePermit: tokens in use and jobs waiting for one, the
// rate's starts spent, and keys held and waited for; once the permits are
// released, none is in use and none waits.
func TestLimitStatesOfPermits(t *testing.T) {
	for _, typ := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(typ), func(t *testing.T) {
			q := limitedQueue(t, typ, 2, runtime.Rate{N: 5, Per: time.Minute})
			q.LimitKey = "Customer"
			t.Cleanup(func() {
				for _, k := range []string{"a", "b", "c"} {
					deleteQueues(rabbitmq.KeyLeaseQueue(q.Name, k))
				}
			})
			bs := dialN(t, 2)
			a := acquire(t, bs[0], q, "a")
			b := acquire(t, bs[1], q, "b")

			// Two more wait: one for key a, one (holding key c) for a token.
			ctx, cancel := context.WithCancel(ctxT(t))
			var wg sync.WaitGroup
			waiters := make(chan runtime.Permit, 2)
			for i, key := range []string{"a", "c"} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := bs[i].AcquirePermit(ctx, q, key)
					if err == nil {
						waiters <- p
					}
				}()
			}
			t.Cleanup(func() {
				cancel()
				wg.Wait()
				close(waiters)
				for p := range waiters {
					p.Release()
				}
			})
			want := admin.LimitState{
				Queue: q.Name, Limit: 2, InUse: 2, Waiting: 1,
				Rate: runtime.Rate{N: 5, Per: time.Minute}, RateReady: 3,
				KeysHeld: 3, KeysWaiting: 1,
			}
			states := func() error {
				got, err := bs[0].LimitStates(ctxT(t), []runtime.QueueConfig{q})
				if err != nil {
					return err
				}
				if len(got) != 1 || got[0] != want {
					return fmt.Errorf("LimitStates = %+v, want [%+v]", got, want)
				}
				return nil
			}
			eventually.Nil(t, wait, states, "the limits as the permits hold them")
			all, err := bs[1].LimitStates(ctxT(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(all, func(s admin.LimitState) bool { return s.Queue == q.Name }); i < 0 || all[i] != want {
				t.Errorf("LimitStates of every queue: %+v, want %+v among them", all, want)
			}

			a.Release()
			b.Release()
			// The waiters get theirs: key a's and then a token each. One
			// begins its run, spending a start; the other is released
			// unrun, giving its start back.
			within(t, waiters, "a waiting permit").Release()
			p := within(t, waiters, "a waiting permit")
			p.(runtime.PermitStarter).Started()
			p.Release()
			want = admin.LimitState{
				Queue: q.Name, Limit: 2, Rate: runtime.Rate{N: 5, Per: time.Minute}, RateReady: 2,
			}
			eventually.Nil(t, wait, states, "the limits with every permit released")
		})
	}
}
