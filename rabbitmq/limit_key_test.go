package rabbitmq_test

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// keyedQueue returns a config of a queue of type typ with a LimitKey and
// limit (0 for none), whose key lease queues of keys are deleted when t
// ends.
func keyedQueue(t *testing.T, typ runtime.QueueType, limit int, keys ...string) runtime.QueueConfig {
	t.Helper()
	q := limitedQueue(t, typ, limit, runtime.Rate{})
	q.LimitKey = "Customer"
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, k := range keys {
			deleteQueues(rabbitmq.KeyLeaseQueue(q.Name, k))
		}
	})
	return q
}

// TestKeyPermits: two workers never hold one key at once; they hold two
// keys at once; a key waited for is granted once its holder releases it.
func TestKeyPermits(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			q := keyedQueue(t, typ, 0, "acme", "globex", "a b/c")
			bs := dialN(t, 2)
			p := acquire(t, bs[0], q, "acme")
			// Declared with x-expires of 10 minutes, besides a lease
			// queue's x-single-active-consumer: the same declare is
			// accepted, where other arguments would be refused.
			ch := rawChannel(t)
			if _, err := ch.QueueDeclare(rabbitmq.KeyLeaseQueue(q.Name, "acme"), true, false, false, false, amqp.Table{
				"x-single-active-consumer": true, "x-expires": int32(10 * time.Minute / time.Millisecond),
			}); err != nil {
				t.Fatalf("key lease queue declared otherwise: %v", err)
			}
			refused(t, bs[1], q, "acme", 300*time.Millisecond)
			other := acquire(t, bs[1], q, "globex")
			odd := acquire(t, bs[1], q, "a b/c") // hashed into its lease name
			refused(t, bs[0], q, "a b/c", 300*time.Millisecond)
			got := make(chan runtime.Permit, 1)
			go func() {
				p, err := bs[1].AcquirePermit(ctxT(t), q, "acme")
				if err != nil {
					t.Error(err)
					close(got)
					return
				}
				got <- p
			}()
			eventually.True(t, wait, func() bool {
				return consumers(t, rabbitmq.KeyLeaseQueue(q.Name, "acme")) == 2
			}, "a second contender for key acme")
			p.Release()
			second := within(t, got, "key acme after its release")
			if second == nil {
				t.FailNow()
			}
			refused(t, bs[0], q, "acme", 300*time.Millisecond)
			second.Release()
			other.Release()
			odd.Release()
			second.Release() // twice is safe
			acquire(t, bs[0], q, "acme").Release()
		})
	}
}

// TestKeyWithLimit: a LimitKey with a Limit allows one job per key and at
// most Limit in all; the key is taken first, and given back when the
// Limit's token cannot be had.
func TestKeyWithLimit(t *testing.T) {
	q := keyedQueue(t, runtime.QueueClassic, 2, "k1", "k2", "k3")
	bs := dialN(t, 2)
	p1 := acquire(t, bs[0], q, "k1")
	p2 := acquire(t, bs[1], q, "k2")
	// k3 is free but the Limit is taken: the wait ends with its context
	// and gives k3 back.
	refused(t, bs[0], q, "k3", 300*time.Millisecond)
	k3 := acquire(t, bs[1], keyOnly(q), "k3")
	k3.Release()
	p1.Release()
	p3 := acquire(t, bs[0], q, "k3")
	p2.Release()
	p3.Release()
}

// keyOnly is q without its Limit: permits of it take the key's lease
// alone.
func keyOnly(q runtime.QueueConfig) runtime.QueueConfig {
	q.Limit = 0
	return q
}
