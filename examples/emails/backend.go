package main

import (
	"context"
	"fmt"
	"os"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// amqpURLEnv names the environment variable that switches the example to
// RabbitMQ.
const amqpURLEnv = "QUEUEY_AMQP_URL"

// openBackend returns the backend to run on, a name to print for it and a
// function that closes it: RabbitMQ at $QUEUEY_AMQP_URL when that is set,
// the in-memory backend otherwise.
func openBackend(ctx context.Context) (runtime.Backend, string, func() error, error) {
	url := os.Getenv(amqpURLEnv)
	if url == "" {
		b := runtime.NewMemoryBackend()
		return b, "in memory (set " + amqpURLEnv + " to use RabbitMQ)", b.Close, nil
	}
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{})
	if err != nil {
		return nil, "", nil, fmt.Errorf("dial RabbitMQ at %s=%s: %w", amqpURLEnv, url, err)
	}
	return b, "RabbitMQ " + b.ServerVersion() + " at " + amqpURLEnv, b.Close, nil
}
