package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	poll "github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// verbose logs warnings and above to stderr when QUEUEY_FAULTS_LOG is set.
func verbose() *slog.Logger {
	if os.Getenv("QUEUEY_FAULTS_LOG") == "" {
		return quiet()
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testQueue returns a job queue of its own, deleted with its dead-letter
// queue when t ends.
func testQueue(t *testing.T, url string) runtime.QueueConfig {
	t.Helper()
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	q := runtime.DefaultQueueConfig("queuey-faults." + t.Name() + "." + hex.EncodeToString(buf[:]))
	q.Kind = runtime.KindOf[job]()
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Errorf("delete queues: %v", err)
			return
		}
		defer conn.Close()
		for _, name := range []string{q.Name, q.Name + ".dead"} {
			ch, err := conn.Channel()
			if err != nil {
				return
			}
			_, _ = ch.QueueDelete(name, false, false, false)
			ch.Close()
		}
	})
	return q
}

// dial returns a backend closed when t ends.
func dial(t *testing.T, url string, opts rabbitmq.Options) *rabbitmq.Backend {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = verbose()
	}
	if opts.ManagementURL == "" {
		opts.ManagementURL = brokertest.ManagementURL()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := rabbitmq.Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// depth is how many messages queue holds (ready and unacked), by a passive
// declare on a connection of its own.
func depth(t *testing.T, url, queue string) int {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %q: %v", queue, err)
	}
	return q.Messages
}

// eventually polls cond until it holds or wait passes, and fails t then,
// with the logs of the given workers.
func eventually(t *testing.T, what string, cond func() bool, ws ...*workerProc) {
	t.Helper()
	if !poll.Wait(wait, cond) {
		var logs strings.Builder
		for _, w := range ws {
			fmt.Fprintf(&logs, "\n--- worker %s log:\n%s", w.name, w.logTail())
		}
		t.Fatalf("%s: not within %v%s", what, wait, logs.String())
	}
}

// byTime returns every entry of the workers' ledgers, oldest first.
func byTime(ws ...*workerProc) []entry {
	var all []entry
	for _, w := range ws {
		all = append(all, w.entries()...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	return all
}

// handledAfter reports when w first handled a job after t, if it did.
func handledAfter(w *workerProc, t time.Time) (time.Time, bool) {
	for _, e := range w.entries() {
		if e.at.After(t) {
			return e.at, true
		}
	}
	return time.Time{}, false
}

// producer dials url (closed when t ends) and declares q with a producer
// onto it.
func producer(t *testing.T, url string, q runtime.QueueConfig) (*rabbitmq.Backend, *runtime.Producer) {
	t.Helper()
	b := dial(t, url, rabbitmq.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	return b, p
}
