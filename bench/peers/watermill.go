package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ThreeDotsLabs/watermill"
	wamqp "github.com/ThreeDotsLabs/watermill-amqp/v3/pkg/amqp"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// watermillPeers is watermill-amqp's durable queue: persistent messages,
// each Publish waiting for its confirm (ConfirmDelivery), a pool of as many
// channels as producers (without one it opens a channel per Publish), and
// one subscription with prefetch 50. Watermill hands a subscription's
// messages over one at a time, each acked before the next; it does not
// listen for basic.return, so Mandatory would add nothing and stays off.
func watermillPeers() []peer {
	return []peer{
		{"watermill-amqp", fmt.Sprintf("%d publishers, confirms, channel pool %d", producers, producers), runWatermill},
	}
}

func runWatermill(ctx context.Context, jobs, round int) (e2e.Span, error) {
	url := brokertest.URL()
	topic := queueName("watermill", round)
	defer brokertest.DeleteQueues(url, topic)
	cfg := wamqp.NewDurableQueueConfig(url)
	cfg.Publish.ConfirmDelivery = true
	cfg.Publish.ChannelPoolSize = producers
	cfg.Consume.Qos.PrefetchCount = prefetch
	logger := watermill.NopLogger{}
	sub, err := wamqp.NewSubscriber(cfg, logger)
	if err != nil {
		return e2e.Span{}, err
	}
	defer sub.Close()
	pub, err := wamqp.NewPublisher(cfg, logger)
	if err != nil {
		return e2e.Span{}, err
	}
	defer pub.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	msgs, err := sub.Subscribe(sctx, topic)
	if err != nil {
		return e2e.Span{}, err
	}
	var handled atomic.Int64
	warm, all := make(chan struct{}), make(chan struct{})
	go func() {
		for m := range msgs {
			m.Ack()
			switch handled.Add(1) {
			case 1:
				close(warm)
			case int64(jobs) + 1:
				close(all)
			}
		}
	}()
	payload := e2e.Payload()
	publish := func() error {
		return pub.Publish(topic, message.NewMessage(watermill.NewUUID(), payload))
	}
	if err := publish(); err != nil {
		return e2e.Span{}, err
	}
	select {
	case <-warm:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("warm-up message not handled: %w", ctx.Err())
	}
	mark := rabbit.Start()
	if err := e2e.Concurrently(jobs, producers, publish); err != nil {
		return e2e.Span{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("handled %d of %d messages: %w", handled.Load()-1, jobs, ctx.Err())
	}
	return mark.Stop(jobs), nil
}
