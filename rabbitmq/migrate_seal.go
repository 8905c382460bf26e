package rabbitmq

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// Sealing a classic queue before it is deleted.
//
// The broker confirms a publish routed to a queue that is being deleted,
// and the message goes with the queue. So a classic queue, once its jobs
// have moved to the temporary queue, is sealed before it is deleted: a
// policy of its own (max-length 0, overflow reject-publish) makes the
// broker nack every publish to it, and a producer whose publish is nacked
// publishes to the temporary queue instead. A job that reached the queue
// before the seal took hold is dead-lettered by the broker as over the
// length limit: into the queue's own dead-letter queue (its arguments name
// it, and they win over a policy) or, where it has none, into the
// temporary queue (the policy names it). The seal is lifted before the
// queue is declared again; the jobs it sent to the dead letters go back
// to the queue once it is. The temporary queue is sealed the same way
// before it is deleted in turn, what its seal drops going to the queue.
// See pub_migrating.go for what a producer does.
//
// A policy of higher priority than sealPriority, or an operator policy
// with a length limit of its own, would change what the seal does; while
// it holds, the seal stands in for the queue's other policies.

// sealPriority is the priority of a seal policy: above any an operator
// would set.
const sealPriority = 1 << 30

// sealWait bounds the wait for the broker to report a seal on its queue.
const sealWait = time.Minute

// sealPolicy names the policy that seals queue name.
func sealPolicy(name string) string { return "queuey.migrating." + name }

// sealed is a seal set on a queue: when, and where the broker
// dead-letters what it drops (dead is empty when that is the temporary
// queue), with how many letters were there before.
type sealed struct {
	moved      int // messages moved before the seal
	at         time.Time
	dead       string
	deadBefore int
}

// seal moves the jobs of queue name (a classic queue with arguments args)
// to queue to, then seals name, what the seal drops going to to unless
// args name a dead-letter queue, and waits until the broker applies it.
func (m *migration) seal(ctx context.Context, name, to string, args map[string]any) (*sealed, error) {
	m.step("move the messages of %q to %q", name, to)
	moved, err := m.move(ctx, name, to, func(*amqp.Channel) error { return nil })
	if err != nil {
		return nil, err
	}
	s := &sealed{}
	s.moved = moved
	if dlx, ok := args[topology.ArgDeadLetterExchange].(string); ok {
		key, _ := args[topology.ArgDeadLetterRoutingKey].(string)
		if dlx != "" || key == "" {
			return nil, fmt.Errorf("%w: queue %q dead-letters to exchange %q with key %q, not to a queue by name: a job arriving as it is sealed could not be found again", admin.ErrCannotMigrate, name, dlx, key)
		}
		st, found, err := inspectQueue(ctx, m.b.life, m.b.ops.conn, key)
		if err != nil {
			return nil, err
		}
		if found {
			s.dead, s.deadBefore = key, st.Messages
		}
	}
	m.step("seal %q: the broker refuses publishes to it, which go to %q", name, to)
	s.at = time.Now()
	p := mgmt.Policy{
		Name:     sealPolicy(name),
		Pattern:  "^" + regexp.QuoteMeta(name) + "$",
		ApplyTo:  "queues",
		Priority: sealPriority,
		Definition: map[string]any{
			"max-length": 0, "overflow": "reject-publish",
			"dead-letter-exchange": "", "dead-letter-routing-key": to,
		},
	}
	if err := m.c.PutPolicy(ctx, p); err != nil {
		return nil, err
	}
	// The management API reports a queue's policy from its statistics,
	// which lag by up to their interval (5 s by default).
	wctx, cancel := context.WithTimeout(ctx, sealWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		q, err := m.c.Queue(wctx, name)
		if err != nil && wctx.Err() == nil {
			return nil, err
		}
		if err == nil && q.Policy == p.Name {
			return s, nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("the broker did not report the seal (policy %q) on the queue within %v (its policy: %q; one of higher priority wins): %w", p.Name, sealWait, q.Policy, wctx.Err())
		case <-tick.C:
		}
	}
}

// unseal puts back on queue name, declared again, the jobs the seal made
// the broker dead-letter into its dead-letter queue as it took hold, and
// returns how many. A seal whose dead letters did not grow sent none.
func (m *migration) unseal(ctx context.Context, name string, s *sealed) (int, error) {
	if s == nil || s.dead == "" {
		return 0, nil
	}
	st, found, err := inspectQueue(ctx, m.b.life, m.b.ops.conn, s.dead)
	if err != nil || !found || st.Messages <= s.deadBefore {
		return 0, err
	}
	if s.dead != m.b.ops.names.Dead(name).Name {
		return 0, fmt.Errorf("%d letters came into %q, which is not the dead-letter queue queuey gives %q", st.Messages-s.deadBefore, s.dead, name)
	}
	since := s.at.Add(-time.Second).Truncate(time.Second) // x-death times are whole seconds
	var ids []string
	page := admin.DeadLetterPage{Limit: admin.MaxDeadLetterLimit}
	for {
		list, err := m.b.DeadLetters(ctx, name, page)
		if err != nil {
			return 0, err
		}
		for _, l := range list.Letters {
			if strings.Contains(l.Reason, "x-death reason maxlen") && !l.DeadLetteredAt.Before(since) {
				ids = append(ids, l.ID)
			}
		}
		if list.Next == "" {
			break
		}
		page.After = list.Next
	}
	if len(ids) == 0 {
		return 0, nil
	}
	m.step("put back on %q the %d jobs the seal sent to %q", name, len(ids), s.dead)
	res, err := m.b.RedriveDeadLetters(ctx, name, admin.DeadLetterSelector{IDs: slices.Clip(ids)}, nil)
	return len(res.Moved), err
}
