// Command queuey shows an operator every queue and dead letter of a
// queuey application on RabbitMQ, re-drives or purges dead letters, and
// relays a transactional outbox to the broker. Run it with --help for
// usage.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/queuey/queuey/cmd/queuey/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
