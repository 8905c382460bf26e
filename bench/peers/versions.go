package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	goredis "github.com/redis/go-redis/v9"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// versions says what ran: the client modules and the servers' versions.
func versions(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var parts []string
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/rabbitmq/amqp091-go", "github.com/riverqueue/river", "github.com/hibiken/asynq",
				"github.com/ThreeDotsLabs/watermill", "github.com/ThreeDotsLabs/watermill-amqp/v3", "github.com/jackc/pgx/v5":
				parts = append(parts, d.Path+" "+d.Version)
			}
		}
	}
	parts = append(parts, runtime.Version())
	if c, err := amqp.Dial(brokertest.URL()); err == nil {
		parts = append(parts, fmt.Sprintf("RabbitMQ %v", c.Properties["version"]))
		c.Close()
	}
	r := goredis.NewClient(&goredis.Options{Addr: redisAddr})
	if info, err := r.InfoMap(ctx, "server").Result(); err == nil {
		parts = append(parts, "Redis "+info["Server"]["redis_version"])
	}
	r.Close()
	if c, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:5432/postgres"); err == nil {
		var v string
		if c.QueryRow(ctx, "SHOW server_version").Scan(&v) == nil {
			parts = append(parts, "PostgreSQL "+strings.Fields(v)[0])
		}
		c.Close(ctx)
	}
	return strings.Join(parts, ", ")
}
