package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// BenchmarkControl measures what schedules and pauses cost on RabbitMQ:
//
//	LeaseAdvance  recording one tick with the lease (publish, confirm, ack,
//	              take the new lease message): what a tick adds to its
//	              enqueue
//	LeaseHandover a held lease released and taken by a contender waiting on
//	              another connection: the floor of a scheduler failover
//	PauseResume   queuey queues pause then resume of one queue, with one
//	              watcher: marker declare, notice, marker delete, notice
//
//	go test -run '^$' -bench Control ./bench/
func BenchmarkControl(b *testing.B) {
	requireBroker(b)
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	dial := func() *rabbitmq.Backend {
		be := dialBroker(b, ctx, rabbitmq.Options{})
		b.Cleanup(func() { _ = be.Close() })
		return be
	}
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-bench.control." + hex.EncodeToString(buf[:])
	b.Cleanup(func() {
		if conn, err := amqp.Dial(amqpURL()); err == nil {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete("queuey.lease."+name, false, false, false) // the lease's queue
				_, _ = ch.QueueDelete(name, false, false, false)
				_, _ = ch.QueueDelete(name+".dead", false, false, false)
			}
			conn.Close()
		}
	})
	one, two := dial(), dial()

	b.Run("LeaseAdvance", func(b *testing.B) {
		h, err := one.AcquireLease(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Release()
		mark := time.Now()
		for b.Loop() {
			mark = mark.Add(time.Second)
			if err := h.Advance(ctx, mark); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("LeaseHandover", func(b *testing.B) {
		holders := []*rabbitmq.Backend{one, two}
		h, err := holders[0].AcquireLease(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		i := 0
		for b.Loop() {
			i++
			got := make(chan runtime.HeldLease, 1)
			go func() {
				n, err := holders[i%2].AcquireLease(ctx, name)
				if err != nil {
					b.Error(err)
				}
				got <- n
			}()
			_ = h.Release()
			if h = <-got; h == nil {
				b.FailNow()
			}
		}
		_ = h.Release()
	})
	b.Run("PauseResume", func(b *testing.B) {
		q := runtime.DefaultQueueConfig(name)
		if err := one.Declare(ctx, q); err != nil {
			b.Fatal(err)
		}
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		states, err := two.WatchPaused(wctx, name)
		if err != nil {
			b.Fatal(err)
		}
		until := func(want bool) {
			for {
				s, ok := <-states
				if !ok {
					b.Fatal("watch ended")
				}
				if s == want {
					return
				}
			}
		}
		until(false)
		for b.Loop() {
			if err := one.PauseQueue(ctx, name); err != nil {
				b.Fatal(err)
			}
			until(true)
			if err := one.ResumeQueue(ctx, name); err != nil {
				b.Fatal(err)
			}
			until(false)
		}
	})
}
