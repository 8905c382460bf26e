package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestOverlongIDIsRefusedAlone: a job ID longer than an AMQP short string
// is refused by the producer's job-ID rule with an error naming its
// length, before it reaches the wire, while many good publishes on the same connection all
// succeed: sent, it would make the broker close the publishing connection.
func TestOverlongIDIsRefusedAlone(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	const good = 400
	errs := make(chan error, good)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range good {
		wg.Go(func() {
			<-start
			_, err := runtime.Enqueue(ctxT(t), p, q, job{N: i})
			errs <- err
		})
	}
	var bad error
	wg.Go(func() {
		<-start
		_, bad = runtime.Enqueue(ctxT(t), p, q, job{N: -1}, runtime.WithID(strings.Repeat("x", 300)))
	})
	close(start)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("good publish: %v", err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d good publishes failed", failed, good)
	}
	if !errors.Is(bad, runtime.ErrInvalidOption) {
		t.Fatalf("publish with a 300-byte ID = %v, want ErrInvalidOption", bad)
	}
	for _, want := range []string{"ID", "300 bytes"} {
		if !strings.Contains(bad.Error(), want) {
			t.Errorf("error %q does not say %q", bad, want)
		}
	}
	if n := queueLen(t, rawChannel(t), q.Name); n != good {
		t.Errorf("queue holds %d jobs, want %d", n, good)
	}

	// Every path checks: a raw publish with a too-long routing key, too.
	err := b.PublishRaw(ctxT(t), strings.Repeat("q", 256), []byte("x"))
	if !errors.Is(err, rabbitmq.ErrFieldTooLong) || !strings.Contains(err.Error(), fmt.Sprint(256)) {
		t.Errorf("raw publish to a 256-byte queue name = %v, want ErrFieldTooLong naming its length", err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: good}); err != nil {
		t.Errorf("publish after the refused ones: %v", err)
	}
}

// TestCancelledBatchLeavesNoGoroutines: a batch whose context ends while
// its publishes await their confirms returns at once, leaving at most one
// goroutine to wait for the confirms the broker still owes (not one per
// publish), and that one ends once they come.
func TestCancelledBatchLeavesNoGoroutines(t *testing.T) {
	b := dial(t, rabbitmq.Options{PublishChannels: 1}) // open at the first enqueue
	q, p := jobQueue(t, b)
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 0}); err != nil { // the channel is open
		t.Fatal(err)
	}
	envs := make([]*runtime.Envelope, 20000)
	for i := range envs {
		envs[i] = &runtime.Envelope{ID: fmt.Sprintf("cancelled-%d", i), Queue: q.Name, Kind: q.Kind, Payload: []byte{0x80}, Attempt: 1, MaxAttempts: 1, EnqueuedAt: time.Now()}
	}
	raw := rawChannel(t)
	ignore := goleak.IgnoreCurrent()
	before := goruntime.NumGoroutine()
	// The context ends once the first publishes reach the queue: the
	// batch's window is in flight then.
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		defer cancel()
		for ctx.Err() == nil {
			st, err := raw.QueueDeclarePassive(q.Name, true, false, false, false, nil)
			if err != nil || st.Messages > 1 {
				return
			}
		}
	}()
	errs := b.PublishBatch(ctx, envs)
	cancel()
	<-polled
	left := goruntime.NumGoroutine() - before
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	t.Logf("%d of %d publishes failed with the context; %d goroutines left right after", failed, len(envs), left)
	if failed == 0 {
		t.Fatal("no publish failed with the cancelled context")
	}
	if left > 5 {
		t.Errorf("a cancelled batch left %d goroutines behind, want at most a few", left)
	}
	// What is left waits for the confirms the broker still owes, which a
	// busy broker sends late: wait for them (bounded), then for nothing
	// to be left at all.
	eventually.Wait(wait, func() bool { return goruntime.NumGoroutine() <= before })
	goleak.VerifyNone(t, ignore)
}
