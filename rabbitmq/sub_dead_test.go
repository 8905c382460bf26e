package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// deadLetters polls b's dead letters of queue until it holds n, bounded by
// wait, and returns the n oldest, leaving them in place. A dead-letter queue
// that does not exist (yet) holds none.
func deadLetters(t *testing.T, b *rabbitmq.Backend, queue string, n int) []admin.DeadLetterInfo {
	t.Helper()
	var list admin.DeadLetterList
	if !eventually.Wait(wait, func() bool {
		var err error
		if list, err = b.DeadLetters(ctxT(t), queue, admin.DeadLetterPage{Limit: n}); err != nil && !errors.Is(err, runtime.ErrUnknownQueue) {
			t.Fatal(err)
		}
		return len(list.Letters) >= n
	}) {
		t.Fatalf("%d of %d dead letters of %q within %v", len(list.Letters), n, queue, wait)
	}
	return list.Letters
}

// moveFailures returns the records that say an invalid message could not
// be moved, among those logs holds now.
func moveFailures(logs records) []slog.Record {
	var out []slog.Record
	for len(logs) > 0 {
		if rec := <-logs; strings.Contains(rec.Message, "could not move invalid message") {
			out = append(out, rec)
		}
	}
	return out
}

// TestMissingDeadLetterQueueIsDeclaredAgain: with q.dead deleted under a
// running consumer, poison and a permanently failed job still end up in
// q.dead, which the backend declares again, and nothing goes back to q.
func TestMissingDeadLetterQueueIsDeclaredAgain(t *testing.T) {
	logs := make(records, 1024)
	b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
	q, p := jobQueue(t, b)
	ran := make(chan int, 16)
	runWorker(t, b, q, func(_ context.Context, j job) error {
		ran <- j.N
		if j.N == 2 {
			return runtime.Permanent(errors.New("no way"))
		}
		return nil
	})
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	within(t, ran, "job 1, with the consumer running")

	raw := rawChannel(t)
	if _, err := raw.QueueDelete(q.Name+".dead", false, false, false); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRaw(ctxT(t), q.Name, []byte("poison")); err != nil {
		t.Fatal(err)
	}
	dead := deadLetters(t, b, q.Name, 1)
	if !dead[0].Poison || string(dead[0].Body) != "poison" {
		t.Errorf("dead letter = %+v, want the poison", dead[0])
	}

	if _, err := raw.QueueDelete(q.Name+".dead", false, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 2}); err != nil {
		t.Fatal(err)
	}
	dead = deadLetters(t, b, q.Name, 1)
	if dead[0].Poison || !strings.Contains(dead[0].Reason, "no way") {
		t.Errorf("dead letter = %+v, want job 2 with its reason", dead[0])
	}
	if n := queueLen(t, raw, q.Name); n != 0 {
		t.Errorf("%q holds %d messages, want 0", q.Name, n)
	}
	if f := moveFailures(logs); len(f) > 0 {
		t.Errorf("%d failures to move the poison, want none: %v", len(f), f[0].Message)
	}
}

// TestPoisonBacksOffWhenDeadLetterQueueRefuses: while q.dead refuses
// every publish, an invalid message goes back to q only after a backoff
// that grows, 1s then 2s, never in a hot loop; once q.dead is gone it is
// declared again and the message lands there.
func TestPoisonBacksOffWhenDeadLetterQueueRefuses(t *testing.T) {
	logs := make(records, 4096)
	b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
	q, p := jobQueue(t, b)
	ran := make(chan int, 1)
	runWorker(t, b, q, func(_ context.Context, j job) error { ran <- j.N; return nil })
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	within(t, ran, "job 1, with the consumer running")
	raw := rawChannel(t)
	if _, err := raw.QueueDelete(q.Name+".dead", false, false, false); err != nil {
		t.Fatal(err)
	}
	// A dead-letter queue that nacks every publish.
	if _, err := raw.QueueDeclare(q.Name+".dead", true, false, false, false, amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishRaw(ctxT(t), q.Name, []byte("poison")); err != nil {
		t.Fatal(err)
	}
	var failures []slog.Record
	if !eventually.Wait(wait, func() bool {
		failures = append(failures, moveFailures(logs)...)
		return len(failures) >= 2
	}) {
		t.Fatalf("%d failures to move the poison logged within %v, want 2", len(failures), wait)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if got, _ := attr(failures[i], "requeue_in").(time.Duration); got != want {
			t.Errorf("failure %d: requeue_in = %v, want %v", i+1, attr(failures[i], "requeue_in"), want)
		}
	}
	if _, err := raw.QueueDelete(q.Name+".dead", false, false, false); err != nil {
		t.Fatal(err)
	}
	dead := deadLetters(t, b, q.Name, 1)
	if string(dead[0].Body) != "poison" {
		t.Errorf("dead letter = %+v, want the poison", dead[0])
	}
	if f := append(failures, moveFailures(logs)...); len(f) > 2 {
		t.Errorf("%d failures logged, want 2: the poison came back before its backoff", len(f))
	}
}

// TestPoisonKeepsPropertiesAndHeaders: an invalid message moved to q.dead
// keeps its headers and properties, and gains the reason and the queue.
func TestPoisonKeepsPropertiesAndHeaders(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[job]()
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0).UTC()
	sent := amqp.Publishing{
		Headers:         amqp.Table{"tenant": "t1", "n": int32(7), "nested": amqp.Table{"a": "b"}},
		ContentType:     "text/plain",
		ContentEncoding: "identity",
		DeliveryMode:    amqp.Transient,
		Priority:        3,
		CorrelationId:   "corr-1",
		ReplyTo:         "replies",
		Expiration:      "600000",
		MessageId:       "poison-1",
		Timestamp:       ts,
		Type:            "foreign",
		UserId:          "guest",
		AppId:           "legacy-app",
		Body:            []byte("not an envelope"),
	}
	if err := publishRaw(t, raw, q.Name, sent); err != nil {
		t.Fatal(err)
	}
	sub, err := b.Consume(ctxT(t), q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var m amqp.Delivery
	if !eventually.Wait(wait, func() bool {
		var ok bool
		if m, ok, err = raw.Get(q.Name+".dead", true); err != nil {
			t.Fatal(err)
		}
		return ok
	}) {
		t.Fatalf("poison not in %q within %v", q.Name+".dead", wait)
	}
	for k, want := range map[string]any{
		"tenant": "t1", "n": int32(7),
		"x-queuey-queue":               q.Name,
		"x-queuey-original-expiration": "600000",
		"x-queuey-original-user-id":    "guest",
	} {
		if got := m.Headers[k]; got != want {
			t.Errorf("header %s = %v (%T), want %v (%T)", k, got, got, want, want)
		}
	}
	if nested, _ := m.Headers["nested"].(amqp.Table); nested["a"] != "b" {
		t.Errorf("nested header = %v, want a=b", m.Headers["nested"])
	}
	if r, _ := m.Headers["x-queuey-dead-reason"].(string); !strings.Contains(r, "not a valid envelope") {
		t.Errorf("reason header = %q", r)
	}
	got := amqp.Publishing{ContentType: m.ContentType, ContentEncoding: m.ContentEncoding, Priority: m.Priority,
		CorrelationId: m.CorrelationId, ReplyTo: m.ReplyTo, MessageId: m.MessageId, Timestamp: m.Timestamp.UTC(),
		Type: m.Type, AppId: m.AppId, Body: m.Body}
	want := sent
	want.Headers, want.DeliveryMode, want.Expiration, want.UserId = nil, 0, "", ""
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("properties = %+v\nwant %+v", got, want)
	}
	if m.DeliveryMode != amqp.Persistent || m.Expiration != "" || m.UserId != "" {
		t.Errorf("delivery mode %d, expiration %q, user id %q; want persistent and none", m.DeliveryMode, m.Expiration, m.UserId)
	}
}
