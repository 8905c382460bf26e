package outbox_test

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/pgtest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/rabbitmq"
)

// childEnv, set to a schema's name, makes the test binary a relay on that
// schema's outbox to the test broker, until it is killed.
const childEnv = "QUEUEY_OUTBOX_TEST_RELAY"

// childBatchEnv is the child relay's batch size.
const childBatchEnv = "QUEUEY_OUTBOX_TEST_BATCH"

// runChild runs the relay of a child process and returns its exit code.
func runChild() int {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = os.Getenv(childEnv)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	b, err := rabbitmq.Dial(ctx, brokertest.URL(), rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: quiet()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	batch, _ := strconv.Atoi(os.Getenv(childBatchEnv))
	fmt.Println("relay running")
	if err := (&outbox.Relay{Pool: pool, Backend: b, BatchSize: batch, Logger: quiet()}).Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
