package main

import (
	"context"
	"fmt"
	"time"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// tunedPrefetch is the prefetch (and concurrency) of the tuned rows.
const tunedPrefetch = 1000

// rabbit is the Meter of every peer on RabbitMQ.
var rabbit = e2e.BrokerMeter(brokertest.URL())

func queueName(who string, round int) string {
	return fmt.Sprintf("queuey-peers.%s.%d.%d", who, time.Now().UnixNano(), round)
}

// amqpPeers are queuey in both shapes and the plain amqp091-go loop with
// the windows that match them.
func amqpPeers() []peer {
	url := brokertest.URL()
	q := func(jobs, round int) e2e.Queuey {
		return e2e.Queuey{URL: url, Queue: queueName("queuey", round), Jobs: jobs, Prefetch: prefetch, Meter: rabbit}
	}
	plain := func(jobs, round, window int) e2e.Plain {
		return e2e.Plain{URL: url, Queue: queueName("plain", round), Jobs: jobs, Window: window, Prefetch: prefetch, Meter: rabbit}
	}
	var peers []peer
	// 10 is the annotation's default; 1 is the fewest levels with which a
	// deferred job still returns ahead of the backlog; at 0 the queue is
	// the plain loop's, and a deferred job returns behind the backlog.
	for _, level := range []int{10, 1, 0} {
		peers = append(peers,
			peer{"queuey", fmt.Sprintf("sync: %d goroutines calling EnqueueX, max_priority=%d", producers, level), func(ctx context.Context, jobs, round int) (e2e.Span, error) {
				c := q(jobs, round)
				c.Producers, c.MaxPriority = producers, e2eLevel(level)
				return c.Run(ctx)
			}},
			peer{"queuey", fmt.Sprintf("batch: EnqueueManyX of %d, max_priority=%d", batch, level), func(ctx context.Context, jobs, round int) (e2e.Span, error) {
				c := q(jobs, round)
				c.Batch, c.MaxPriority = batch, e2eLevel(level)
				return c.Run(ctx)
			}},
		)
	}
	// Tuned as river is: river's own benchmark runs 2,000 workers; queuey
	// and the plain loop get a prefetch of 1,000.
	for _, level := range []int{1, 0} {
		peers = append(peers, peer{"queuey", fmt.Sprintf("tuned: batch of %d, prefetch %d, max_priority=%d", batch, tunedPrefetch, level), func(ctx context.Context, jobs, round int) (e2e.Span, error) {
			c := q(jobs, round)
			c.Batch, c.MaxPriority, c.Prefetch = batch, e2eLevel(level), tunedPrefetch
			return c.Run(ctx)
		}})
	}
	return append(peers, []peer{
		{"amqp091-go", fmt.Sprintf("plain loop, %d confirms in flight", producers), func(ctx context.Context, jobs, round int) (e2e.Span, error) {
			return plain(jobs, round, producers).Run(ctx)
		}},
		{"amqp091-go", "plain loop, 1024 confirms in flight", func(ctx context.Context, jobs, round int) (e2e.Span, error) {
			return plain(jobs, round, 1024).Run(ctx)
		}},
		{"amqp091-go", fmt.Sprintf("tuned: 1024 confirms in flight, prefetch %d", tunedPrefetch), func(ctx context.Context, jobs, round int) (e2e.Span, error) {
			p := plain(jobs, round, 1024)
			p.Prefetch = tunedPrefetch
			return p.Run(ctx)
		}},
	}...)
}

// e2eLevel is annotation level max_priority=level as e2e.Queuey takes it,
// a runtime.QueueConfig.MaxPriority: zero is the default there, and
// runtime.NoPriority declares none.
func e2eLevel(level int) int {
	if level == 0 {
		return runtime.NoPriority
	}
	return level
}
