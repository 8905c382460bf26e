package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// amqpURLEnv names the environment variable that switches the example to
// RabbitMQ.
const amqpURLEnv = "QUEUEY_AMQP_URL"

// delayEnv names the environment variable that says how RabbitMQ holds
// waits: "queue" (hold queues, the default) or "plugin" (an
// x-delayed-message exchange, which needs the delayed-message-exchange
// plugin enabled on the broker).
const delayEnv = "QUEUEY_DELAY"

// openBackend returns the backend to run on, logging to log, a name to
// print for it and a function that closes it: RabbitMQ at
// $QUEUEY_AMQP_URL, holding waits as $QUEUEY_DELAY says, when that is set;
// the in-memory backend otherwise.
func openBackend(ctx context.Context, log *slog.Logger) (runtime.Backend, string, func() error, error) {
	url := os.Getenv(amqpURLEnv)
	if url == "" {
		b := runtime.NewMemoryBackend(runtime.MemoryLogger(log))
		return b, "in memory (set " + amqpURLEnv + " to use RabbitMQ)", b.Close, nil
	}
	delay := runtime.DelayMode(os.Getenv(delayEnv))
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Delay: delay, Logger: log})
	if err != nil {
		return nil, "", nil, fmt.Errorf("dial RabbitMQ at %s=%s with %s=%q: %w", amqpURLEnv, url, delayEnv, delay, err)
	}
	waits := "waits in hold queues (set " + delayEnv + "=plugin for the delayed-message-exchange plugin)"
	if delay == runtime.DelayPlugin {
		waits = "waits in x-delayed-message exchanges (" + delayEnv + "=plugin)"
	}
	return b, "RabbitMQ " + b.ServerVersion() + " at " + amqpURLEnv + ", " + waits, b.Close, nil
}
