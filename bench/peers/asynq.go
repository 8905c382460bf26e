package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/queuey/queuey/bench/e2e"
)

const (
	redisAddr  = "127.0.0.1:6379"
	asynqQueue = "queuey_peers"
)

var redis = e2e.Meter{Servers: []int{6379}}

// asynqPeers is asynq with as many producers and handlers at once as
// queuey's sync shape. TaskCheckInterval, how long an idle server sleeps
// before it looks for tasks again, is 20ms instead of 1s (as river's tuned
// poll interval), so that no run pays for the idle time before its clock
// starts.
func asynqPeers() []peer {
	return []peer{
		{"asynq", fmt.Sprintf("%d producers, concurrency %d", producers, prefetch), runAsynq},
	}
}

func runAsynq(ctx context.Context, jobs, _ int) (e2e.Span, error) {
	opt := asynq.RedisClientOpt{Addr: redisAddr}
	var handled atomic.Int64
	warm, all := make(chan struct{}), make(chan struct{})
	mux := asynq.NewServeMux()
	mux.HandleFunc(asynqQueue, func(context.Context, *asynq.Task) error {
		switch handled.Add(1) {
		case 1:
			close(warm)
		case int64(jobs) + 1:
			close(all)
		}
		return nil
	})
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:       prefetch,
		Queues:            map[string]int{asynqQueue: 1},
		TaskCheckInterval: 20 * time.Millisecond,
		Logger:            nopLogger{},
		LogLevel:          asynq.FatalLevel,
	})
	if err := srv.Start(mux); err != nil {
		return e2e.Span{}, err
	}
	defer srv.Shutdown()
	client := asynq.NewClient(opt)
	defer client.Close()
	payload := e2e.Payload()
	enqueue := func() error {
		_, err := client.EnqueueContext(ctx, asynq.NewTask(asynqQueue, payload), asynq.Queue(asynqQueue))
		return err
	}
	if err := enqueue(); err != nil {
		return e2e.Span{}, err
	}
	select {
	case <-warm:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("warm-up task not handled: %w", ctx.Err())
	}
	mark := redis.Start()
	if err := e2e.Concurrently(jobs, producers, enqueue); err != nil {
		return e2e.Span{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return e2e.Span{}, fmt.Errorf("handled %d of %d tasks: %w", handled.Load()-1, jobs, ctx.Err())
	}
	return mark.Stop(jobs), nil
}

// nopLogger silences asynq.
type nopLogger struct{}

func (nopLogger) Debug(...any) {}
func (nopLogger) Info(...any)  {}
func (nopLogger) Warn(...any)  {}
func (nopLogger) Error(...any) {}
func (nopLogger) Fatal(args ...any) {
	panic(strings.TrimSpace(fmt.Sprintln(args...)))
}
