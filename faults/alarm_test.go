package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestResourceAlarm: while a memory alarm blocks publishing, an enqueue
// fails with rabbitmq.ErrBlocked once its context ends, and jobs already
// queued are still handled and acked (the consuming connection is not
// blocked); once the alarm clears, everything completes.
func TestResourceAlarm(t *testing.T) {
	url := gate(t)
	restoreBroker(t) // the watermark goes back to 0.4 however the test ends
	const before, after = 100, 100
	q := testQueue(t, url)
	b, p := producer(t, url, q)
	confirmed := map[string]bool{}
	enqueue := func(n int) {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		jobs := make([]job, n)
		ids, err := runtime.EnqueueMany(ctx, p, q, jobs)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			confirmed[id] = true
		}
	}
	enqueue(before)

	var (
		mu      sync.Mutex
		handled = map[string]bool{}
	)
	allHandled := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range confirmed {
			if !handled[id] {
				return false
			}
		}
		return true
	}
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		handled[info.ID] = true
		mu.Unlock()
		return nil
	})
	wctx, stop := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(wctx) }()
	defer func() {
		stop()
		select {
		case <-runErr:
		case <-time.After(wait):
			t.Errorf("worker did not stop")
		}
	}()
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("no job started")
	}

	rabbitmqctl(t, "set_vm_memory_high_watermark", "0")
	// The alarm goes on within the broker's memory check interval; until
	// then enqueues still succeed.
	const deadline = 2 * time.Second
	var (
		blockedErr error
		took       time.Duration
	)
	for range 30 {
		ectx, cancel := context.WithTimeout(context.Background(), deadline)
		begin := time.Now()
		id, err := runtime.Enqueue(ectx, p, q, job{})
		took = time.Since(begin)
		cancel()
		if err == nil {
			confirmed[id] = true
			continue
		}
		blockedErr = err
		break
	}
	fmt.Printf("resource alarm: enqueue failed after %v with a %v deadline: %v\n", took.Round(time.Millisecond), deadline, blockedErr)
	if !errors.Is(blockedErr, rabbitmq.ErrBlocked) {
		t.Fatalf("enqueue under the alarm = %v, want rabbitmq.ErrBlocked", blockedErr)
	}
	if took > deadline+500*time.Millisecond {
		t.Errorf("enqueue under the alarm took %v, want it to end with its context (%v)", took, deadline)
	}

	// Handling goes on under the alarm: every queued job is handled and
	// acked while publishing is still blocked.
	close(release)
	eventually(t, "the queued jobs are handled under the alarm", allHandled)
	rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
	_, err := runtime.Enqueue(rctx, p, q, job{})
	rcancel()
	if !errors.Is(err, rabbitmq.ErrBlocked) {
		t.Fatalf("after the handling, enqueue = %v, want ErrBlocked still (the alarm is on)", err)
	}

	rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
	enqueue(after)
	eventually(t, "every job is handled after the alarm clears", allHandled)
}
