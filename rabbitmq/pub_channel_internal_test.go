package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// TestGivenUpPublishKeepsItsReturn: a publish whose caller stops waiting
// (its context ends) before the broker's answer still owns the return the
// broker sends it. Were it taken off the books at once, its return would
// be paired with the next publish on the channel, which would then fail as
// unroutable though the broker stored it.
func TestGivenUpPublishKeepsItsReturn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, p, queue := publishTestbed(ctx, t, "queuey pubchannel test")
	pc, err := p.slots[0].get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	missing := fmt.Sprintf("queuey-test.no-such-queue.%d", time.Now().UnixNano())
	for i := range 20 {
		gone, giveUp := context.WithCancel(ctx)
		w, err := pc.start(gone, "", missing, amqp.Publishing{MessageId: fmt.Sprintf("lost-%d", i)}, true)
		if err != nil {
			t.Fatal(err)
		}
		giveUp()
		if err := pc.await(gone, w, missing); err == nil {
			t.Fatalf("round %d: publish to a missing queue succeeded", i)
		}
		if err := pc.publish(ctx, "", queue, amqp.Publishing{MessageId: fmt.Sprintf("kept-%d", i)}, true); err != nil {
			t.Fatalf("round %d: publish to %s after one given up: %v (unroutable: %v)", i, queue, err, errors.Is(err, ErrUnroutable))
		}
	}
}

// publishTestbed dials a connection named name to the test broker, with a
// publisher of one channel on it, and declares a server-named exclusive
// queue; the connection closes, and the publisher's loops end, when the
// test does.
func publishTestbed(ctx context.Context, t *testing.T, name string) (*connection, *publisher, string) {
	t.Helper()
	brokertest.Require(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	conn, err := dialConnection(ctx, []string{brokertest.URL()}, name, log)
	if err != nil {
		t.Fatal(err)
	}
	p := newPublisher(conn, 1, DefaultMaxMessageSize, log)
	t.Cleanup(p.awaitLoops)
	t.Cleanup(func() { _ = conn.close() })
	ch, err := conn.channel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return conn, p, q.Name
}

// TestGivenUpPublishSaysSo: a publish whose caller stops waiting for its
// confirm is ErrNotConfirmed with the context's error, in words that say
// so once. A confirm may come before the caller stops waiting; of 20
// publishes, at least one is given up.
func TestGivenUpPublishSaysSo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, p, queue := publishTestbed(ctx, t, "queuey pubchannel test")
	pc, err := p.slots[0].get(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("publish to %q: rabbitmq: publish not confirmed: stopped waiting for the broker's confirm: context canceled", queue)
	givenUp := 0
	for i := range 20 {
		gone, giveUp := context.WithCancel(ctx)
		w, err := pc.start(gone, "", queue, amqp.Publishing{MessageId: fmt.Sprintf("given-up-%d", i)}, true)
		if err != nil {
			t.Fatal(err)
		}
		giveUp()
		err = pc.settle(gone, w, queue)
		if err == nil {
			continue // confirmed before the cancel was seen
		}
		givenUp++
		if !errors.Is(err, ErrNotConfirmed) || !errors.Is(err, context.Canceled) || err.Error() != want {
			t.Fatalf("error %q, want %q", err, want)
		}
	}
	if givenUp == 0 {
		t.Fatal("every publish was confirmed before its caller stopped waiting")
	}
}
