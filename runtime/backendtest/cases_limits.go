package backendtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// testQueueNameLimits: a queue name of runtime.MaxQueueNameLen bytes
// (Features.MaxQueueNameLen when set) takes jobs and retries them (a retry
// waits in a queue named after it on RabbitMQ); one byte more is refused by
// Declare with ErrInvalidConfig, as validation refuses it, whatever the
// backend.
func testQueueNameLimits(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	limit := cmp.Or(f.MaxQueueNameLen, runtime.MaxQueueNameLen)
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) {
		q.Name = padName(q.Name, limit)
	})
	h.enqueue(job{N: 1})
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		runs <- r
		if r.Attempt == 1 {
			return errors.New("transient")
		}
		return nil
	})
	if r1, r2 := recv(t, runs, "first run"), recv(t, runs, "second run"); r1.Attempt != 1 || r2.Attempt != 2 {
		t.Fatalf("attempts %d, %d, want 1, 2", r1.Attempt, r2.Attempt)
	}

	tooLong := h.q
	tooLong.Name = padName(uniqueName(t), limit+1)
	err := h.b.Declare(ctxT(t), tooLong)
	wantErrIs(t, err, runtime.ErrInvalidConfig, "declare of a queue name one byte too long")
	want := "at most 235 bytes"
	if f.MaxQueueNameLen != 0 {
		want = fmt.Sprintf("at most %d bytes", f.MaxQueueNameLen)
	}
	wantContains(t, err.Error(), want, "error")
}

// padName returns name followed by "." and as many x as make it n bytes.
func padName(name string, n int) string {
	name += "."
	return name + strings.Repeat("x", n-len(name))
}

// testRetryMaxWithinLongestWait: a RetryMax whose retries the backend
// would refuse as too long once rounded up to the granularity (within a
// second of MaxDeferral) is refused by Declare, before any job could be
// dead-lettered for it; the longest wait of the default granularity
// (MaxDeferral rounded down to it) is taken.
func testRetryMaxWithinLongestWait(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	q := h.q
	q.Name = uniqueName(t) + ".past"
	q.RetryMax = runtime.MaxDeferral - 500*time.Millisecond
	err := h.b.Declare(ctxT(t), q)
	wantErrIs(t, err, runtime.ErrInvalidConfig, "declare with RetryMax within a second of MaxDeferral")
	wantContains(t, err.Error(), "RetryMax", "error")

	q.Name = uniqueName(t) + ".edge"
	q.RetryMax = waits.Longest(runtime.DefaultGranularity)
	if err := h.b.Declare(ctxT(t), q); err != nil {
		t.Errorf("declare with RetryMax = MaxDeferral rounded down to DefaultGranularity = %v: %v", q.RetryMax, err)
	}
}

// testReservedHeaders: an enqueue with a header whose name queuey keeps for
// itself ("queuey-redelivered", which the RabbitMQ backend strips and
// reads as a redelivery) is refused, one job or many, naming the header,
// before anything is published.
func testReservedHeaders(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	headers := map[string]string{"traceparent": "00-abc-def-01", "queuey-redelivered": "1"}
	_, err := runtime.Enqueue(ctxT(t), h.p, h.q, job{N: 1}, runtime.WithHeaders(headers))
	wantErrIs(t, err, runtime.ErrInvalidOption, "enqueue with a reserved header")
	wantContains(t, err.Error(), `header "queuey-redelivered" is reserved`, "error")
	_, err = runtime.EnqueueMany(ctxT(t), h.p, h.q, []job{{N: 2}, {N: 3}}, runtime.WithHeaders(map[string]string{runtime.HeaderTick: "2026-01-01T00:00:00Z"}))
	wantErrIs(t, err, runtime.ErrInvalidOption, "enqueue of many with a reserved header")
	wantContains(t, err.Error(), `header "queuey-tick" is reserved`, "error")
	if rc, ok := h.b.(admin.ReadyCounter); ok {
		if n, err := rc.Ready(ctxT(t), h.q.Name); err != nil || n != 0 {
			t.Errorf("ready jobs after refused enqueues = %d (err %v), want 0", n, err)
		}
	}
}

// testDeclareErrorNamesQueueOnce: a declare that fails (here, on a closed
// backend) says which queue it was declaring once, not once per layer.
func testDeclareErrorNamesQueueOnce(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	b := nb(t)
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	q := runtime.DefaultQueueConfig(uniqueName(t))
	_, err := runtime.NewProducer(ctxT(t), b, q)
	wantErrIs(t, err, runtime.ErrClosed, "NewProducer on a closed backend")
	if n := strings.Count(err.Error(), q.Name); n != 1 {
		t.Errorf("error %q names the queue %d times, want once", err, n)
	}
}
