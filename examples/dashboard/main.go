// Command dashboard serves queuey's web dashboard over the emails example's
// queues on a RabbitMQ, after filling them with jobs in every state: ready,
// in flight, waiting in hold queues, dead (one of them poison, one holding
// markup), and a trickle of new jobs so the chart moves. It is what
// `make dashboard` runs:
//
//	go run ./examples/dashboard [-addr 127.0.0.1:8080] [-read-only]
//
// The broker is QUEUEY_AMQP_URL, or the local default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/internal/dashboard"
	"github.com/queuey/queuey/rabbitmq"
)

// defaultURL is the broker used when QUEUEY_AMQP_URL is not set.
const defaultURL = "amqp://guest:guest@127.0.0.1:5672/"

func main() {
	addr := flag.String("addr", dashboard.DefaultAddr, "address to serve on; loopback unless you say otherwise")
	readOnly := flag.Bool("read-only", false, "hide and refuse re-drive and purge")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, *addr, *readOnly); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, addr string, readOnly bool) error {
	url := os.Getenv("QUEUEY_AMQP_URL")
	if url == "" {
		url = defaultURL
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Logger: log})
	if err != nil {
		return err
	}
	defer b.Close()
	ln, loopback, err := dashboard.Listen(addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	srv, err := dashboard.New(b, dashboard.Options{
		ReadOnly:       readOnly,
		Broker:         url,
		Configs:        emails.Queues(),
		OnlyConfigured: true,
		LoopbackOnly:   loopback,
		Logger:         log,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	traffic, err := startTraffic(ctx, url, out, log)
	if err != nil {
		return err
	}
	defer traffic.stop()
	fmt.Fprintf(out, "dashboard: http://%s/ over RabbitMQ at %s (Ctrl-C stops)\n", ln.Addr(), dashboard.Redact(url))
	if !loopback {
		fmt.Fprintf(out, "dashboard: warning: %s is not a loopback address; anyone who reaches it can re-drive and purge\n", addr)
	}
	return dashboard.Serve(ctx, ln, srv)
}
