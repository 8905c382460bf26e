package rabbitmq_test

import (
	"context"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

func TestConformance(t *testing.T) {
	requireBroker(t)
	backendtest.Run(t, backendtest.Features{PublishRaw: publishRawTo}, newCleaningBackend)
}

// TestConformanceQuorum runs the suite on quorum queues with their waits
// in quorum hold queues on rungs (delay=queue; the ladder, their default,
// has TestConformanceLadderQuorum), as the broker's
// version has them: on 3.x without the priority cases (its quorum queues
// have no priorities, so a deferral returns behind the backlog); on 4.x
// with a deferral returning ahead of the backlog but not strictly next,
// since 4.x quorum queues have two priority levels and deliver two high
// for each normal message while both wait (one job of the backlog may run
// first).
func TestConformanceQuorum(t *testing.T) {
	requireBroker(t)
	f := backendtest.Features{QueueType: runtime.QueueQuorum, Delay: runtime.DelayQueue, CoarsePriority: true, DeferAheadSlack: 1, PublishRaw: publishRawTo}
	if !dial(t, rabbitmq.Options{}).QuorumPriorities() {
		f.NoPriorityOrder = true
	}
	backendtest.Run(t, f, newCleaningBackend)
}

// publishRawTo puts body on queue of b, a cleaningBackend, as it is: the
// way a foreign producer might.
func publishRawTo(ctx context.Context, b runtime.Backend, queue string, body []byte) error {
	return b.(*cleaningBackend).PublishRaw(ctx, queue, body)
}

// cleaningBackend deletes the queues declared through it, their dead-letter
// queues, their quorum hold queues (which never expire), their delay
// exchanges, the lease queues it contended on and the queues of the
// global limits it granted permits of, if any, when the test ends;
// classic hold queues expire on their own.
type cleaningBackend struct {
	*rabbitmq.Backend
	mu     sync.Mutex
	names  []string
	leases []string // lease queues, and the limits' queues
}

func newCleaningBackend(t *testing.T) runtime.Backend {
	c := &cleaningBackend{}
	t.Cleanup(func() {
		conn, err := amqp.Dial(amqpURL())
		if err != nil {
			return
		}
		defer conn.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, q := range c.leases {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(q, false, false, false)
				ch.Close()
			}
		}
		for _, name := range c.names {
			ch, err := conn.Channel()
			if err != nil {
				return
			}
			for _, q := range append([]string{name, name + ".dead"}, topology.Names{}.QuorumHolds(name, 0)...) {
				_, _ = ch.QueueDelete(q, false, false, false) // deleting what does not exist is no error
			}
			ch.Close()
			if ch, err := conn.Channel(); err == nil {
				_ = ch.ExchangeDelete(name+".delay", false, false) // a 404 closes only ch
				ch.Close()
			}
		}
	})
	c.Backend = dial(t, rabbitmq.Options{})
	return c
}

func (c *cleaningBackend) AcquirePermit(ctx context.Context, q runtime.QueueConfig, key string) (runtime.Permit, error) {
	_, _, _, _, all := rabbitmq.LimitQueues(q.Name)
	c.mu.Lock()
	c.leases = append(c.leases, all...)
	if q.LimitKey != "" {
		c.leases = append(c.leases, rabbitmq.KeyLeaseQueue(q.Name, key))
	}
	c.mu.Unlock()
	return c.Backend.AcquirePermit(ctx, q, key)
}

func (c *cleaningBackend) AcquireLease(ctx context.Context, name string) (runtime.HeldLease, error) {
	c.mu.Lock()
	c.leases = append(c.leases, rabbitmq.LeaseQueue(name))
	c.mu.Unlock()
	return c.Backend.AcquireLease(ctx, name)
}

func (c *cleaningBackend) Declare(ctx context.Context, q runtime.QueueConfig) error {
	c.mu.Lock()
	c.names = append(c.names, q.Name)
	c.mu.Unlock()
	return c.Backend.Declare(ctx, q)
}
