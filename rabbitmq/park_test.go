package rabbitmq_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestIdleQueuesHoldNoRunnerGoroutine runs a worker over queues with
// nothing to deliver: each parks, holding only its consumer's two
// goroutines (the client library's and the backend's), and wakes for what
// concerns it: a job, a pause and a resume, its consumer cancelled by the
// broker, and the worker's shutdown (brokertest.Run checks it is clean).
func TestIdleQueuesHoldNoRunnerGoroutine(t *testing.T) {
	const n = 40
	b := dial(t, rabbitmq.Options{Logger: quiet()})
	ran := make(chan string, n)
	w := runtime.NewWorker(b)
	qs := make([]runtime.QueueConfig, n)
	ps := make([]*runtime.Producer, n)
	for i := range qs {
		qs[i], ps[i] = jobQueue(t, b)
		runtime.Handle(w, qs[i], func(ctx context.Context, j job) error {
			ran <- fmt.Sprintf("%d/%d", i, j.N)
			return nil
		})
	}
	ch := rawChannel(t)
	before := goruntime.NumGoroutine()
	brokertest.Run(t, w)
	for _, q := range qs {
		awaitConsumers(t, q.Name, 1)
	}
	// Parked, a queue holds 2 goroutines; consuming, 3.
	parked := func(what string) {
		t.Helper()
		limit := before + 2*n + n/2
		if !eventually.Wait(wait, func() bool { return goruntime.NumGoroutine() <= limit }) {
			t.Fatalf("%s: %d goroutines for %d idle queues, want at most %d (%d before the worker ran)", what, goruntime.NumGoroutine(), n, limit, before)
		}
	}
	parked("after the start")

	enqueue := func(i, jn int) {
		t.Helper()
		if _, err := runtime.Enqueue(ctxT(t), ps[i], qs[i], job{N: jn}); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(7, 1)
	if got := within(t, ran, "the job of a parked queue"); got != "7/1" {
		t.Fatalf("ran %s, want 7/1", got)
	}
	parked("after a job")

	if err := b.PauseQueue(ctxT(t), qs[3].Name); err != nil {
		t.Fatal(err)
	}
	awaitConsumers(t, qs[3].Name, 0)
	enqueue(3, 2)
	if err := b.ResumeQueue(ctxT(t), qs[3].Name); err != nil {
		t.Fatal(err)
	}
	if got := within(t, ran, "the job of a resumed queue"); got != "3/2" {
		t.Fatalf("ran %s, want 3/2", got)
	}

	// Deleted behind the worker's back, the queue's consumer is cancelled
	// by the broker: the runner wakes, declares the queue again and
	// consumes it.
	if _, err := ch.QueueDelete(qs[5].Name, false, false, false); err != nil {
		t.Fatal(err)
	}
	awaitConsumers(t, qs[5].Name, 1)
	enqueue(5, 3)
	if got := within(t, ran, "the job of a queue declared again"); got != "5/3" {
		t.Fatalf("ran %s, want 5/3", got)
	}
	parked("after a pause, a resume and a deletion")
}

// awaitConsumers waits until queue has want consumers, failing t after
// wait; a missing queue counts as none.
func awaitConsumers(t *testing.T, queue string, want int) {
	t.Helper()
	conn, err := amqp.Dial(amqpURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := 0
	if !eventually.Wait(wait, func() bool {
		got = 0
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		if q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil); err == nil {
			got = q.Consumers
			ch.Close()
		} // else the queue is missing, and the channel closed with the error
		return got == want
	}) {
		t.Fatalf("queue %q has %d consumers after %v, want %d", queue, got, wait, want)
	}
}
