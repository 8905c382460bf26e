package bench

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"golang.org/x/sync/errgroup"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// BenchmarkScaleFloor measures what the broker itself takes for the work
// of BenchmarkScale's rows, through plain amqp091-go with no queuey code:
// the floor under those rows on this machine (make bench-scale runs both).
//
//   - publish/distinct: 1,000 persistent messages, each to a queue of its
//     own (as 1,000 distinct delays are to 1,000 hold queues), 64
//     unconfirmed at most; messages confirmed per second.
//   - declare+publish/distinct: the same, the queues declared inside the
//     clock first, as hold queues are (a TTL, a dead-letter route, an
//     expiry): what defer/distinct cannot go below.
//   - publish/one: the same 1,000 into one queue.
//   - publish/one/job-like: the same with messages like queuey's jobs
//     (jobLike) instead of 64 bytes with no properties.
//   - defer/classic, defer/quorum: 1,000 one-delay deferrals' broker work
//     (benchFloorDefer), under BenchmarkScaleWaits' defer/shared rows;
//     defer/enter/classic and defer/enter/quorum the same with each wait
//     published the way a ladder wait is.
//   - declare/1000/max_priority=0 and =10: 1,000 new durable queues
//     declared over 64 channels at once; queues per second.
//   - start/N/per-channel=K: N existing queues consumed (qos, then
//     consume), K consumers to a channel, over 4 connections, 256 channels
//     opening at once; seconds until every consumer is registered. K=1 is
//     queuey's layout (a consumer's channel is its own, so that one
//     queue's failure closes nothing else); K=50 is the fastest layout
//     found here.
//
// Queues are deleted afterwards, outside the clock.
func BenchmarkScaleFloor(b *testing.B) {
	b.Run("publish/distinct", func(b *testing.B) { benchFloorPublish(b, 1000, false, bare) })
	b.Run("declare+publish/distinct", func(b *testing.B) { benchFloorPublish(b, 1000, true, bare) })
	b.Run("publish/one", func(b *testing.B) { benchFloorPublish(b, 1, false, bare) })
	b.Run("publish/one/job-like", func(b *testing.B) { benchFloorPublish(b, 1, false, jobLike) })
	for _, qt := range []string{"classic", "quorum"} {
		b.Run("defer/"+qt, func(b *testing.B) { benchFloorDefer(b, qt, false) })
		b.Run("defer/enter/"+qt, func(b *testing.B) { benchFloorDefer(b, qt, true) })
	}
	for _, mp := range []int{0, 10} {
		b.Run(fmt.Sprintf("declare/1000/max_priority=%d", mp), func(b *testing.B) {
			reportRate(b, "floor-declare", 1000, "queues/s", func(b *testing.B, prefix string) time.Duration {
				names := floorNames(prefix, 1000)
				defer brokertest.DeleteQueues(amqpURL(), names...)
				var args amqp.Table
				if mp > 0 {
					args = amqp.Table{"x-max-priority": int32(mp)}
				}
				return floorDeclare(b, names, args)
			})
		})
	}
	for _, n := range []int{1000, 2100} {
		for _, k := range []int{1, 50} {
			b.Run(fmt.Sprintf("start/%d/per-channel=%d", n, k), func(b *testing.B) { benchFloorStart(b, n, k) })
		}
	}
}

func floorNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s.%d", prefix, i)
	}
	return names
}

func floorDial(b *testing.B) *amqp.Connection {
	b.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	return conn
}

// floorDeclare declares names, durable, with args, over 64 channels at
// once.
func floorDeclare(b *testing.B, names []string, args amqp.Table) time.Duration {
	b.Helper()
	conn := floorDial(b)
	defer conn.Close()
	start := time.Now()
	var g errgroup.Group
	const channels = 64
	for c := range channels {
		g.Go(func() error {
			ch, err := conn.Channel()
			if err != nil {
				return err
			}
			defer ch.Close()
			for i := c; i < len(names); i += channels {
				if _, err := ch.QueueDeclare(names[i], true, false, false, false, args); err != nil {
					return fmt.Errorf("declare %s: %w", names[i], err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// bare returns a persistent message of 64 bytes with no properties, the
// floor rows' message unless they say otherwise.
func bare(int) amqp.Publishing {
	return amqp.Publishing{DeliveryMode: amqp.Persistent, Body: make([]byte, 64)}
}

// benchFloorPublish publishes 1,000 persistent messages, msg(0) to
// msg(999), spread over queues queues, confirmed, 64 in flight at most;
// with hold, the queues are declared like hold queues, and inside the
// clock.
func benchFloorPublish(b *testing.B, queues int, hold bool, msg func(n int) amqp.Publishing) {
	const msgs, window = 1000, 64
	reportRate(b, "floor-publish", msgs, "msgs/s", func(b *testing.B, prefix string) time.Duration {
		names := floorNames(prefix, queues)
		defer brokertest.DeleteQueues(amqpURL(), names...)
		var declared time.Duration
		if hold {
			declared = floorDeclare(b, names, amqp.Table{
				"x-message-ttl": int32(time.Hour / time.Millisecond), "x-expires": int32(2 * time.Hour / time.Millisecond),
				"x-dead-letter-exchange": "", "x-dead-letter-routing-key": prefix,
			})
		} else {
			floorDeclare(b, names, nil)
		}
		conn := floorDial(b)
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			b.Fatal(err)
		}
		if err := ch.Confirm(false); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), benchWait)
		defer cancel()
		batch := make([]amqp.Publishing, msgs)
		for i := range batch {
			batch[i] = msg(i)
		}
		inFlight := make(chan *amqp.DeferredConfirmation, window)
		start := time.Now()
		var failed, confirmErr error
		var wg sync.WaitGroup
		wg.Go(func() {
			for dc := range inFlight {
				ok, err := dc.WaitContext(ctx)
				if confirmErr == nil && (err != nil || !ok) {
					confirmErr = fmt.Errorf("confirm: ok=%v, %v", ok, err)
				}
			}
		})
		for i := range msgs {
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", names[i%queues], true, false, batch[i])
			if err != nil {
				failed = err
				break
			}
			inFlight <- dc
		}
		close(inFlight)
		wg.Wait()
		if failed = cmp.Or(failed, confirmErr); failed != nil {
			b.Fatal(failed)
		}
		return declared + time.Since(start)
	})
}

// benchFloorStart consumes n existing queues, perChannel consumers to a
// channel, and reports the seconds until all are registered.
func benchFloorStart(b *testing.B, n, perChannel int) {
	requireBroker(b)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		names := floorNames(uniqueBenchName("floor-start", i), n)
		floorDeclare(b, names, nil)
		total += floorStart(b, names, perChannel)
		brokertest.DeleteQueues(amqpURL(), names...)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "start-s")
	b.ReportMetric(0, "ns/op")
}

func floorStart(b *testing.B, names []string, perChannel int) time.Duration {
	b.Helper()
	const conns, opening = 4, 256
	cs := make([]*amqp.Connection, conns)
	for i := range cs {
		cs[i] = floorDial(b)
		defer cs[i].Close()
	}
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(opening)
	for first := 0; first < len(names); first += perChannel {
		g.Go(func() error {
			ch, err := cs[(first/perChannel)%conns].Channel()
			if err != nil {
				return err
			}
			for _, name := range names[first:min(first+perChannel, len(names))] {
				if err := ch.Qos(10, 0, false); err != nil {
					return err
				}
				if _, err := ch.Consume(name, "", false, false, false, false, nil); err != nil {
					return fmt.Errorf("consume %s: %w", name, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
