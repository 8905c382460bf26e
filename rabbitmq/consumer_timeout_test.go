package rabbitmq_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// brokerEnv reads the rabbit application's setting key on the local broker
// through rabbitmqctl ("{ok,1800000}", or "undefined"), skipping t when
// rabbitmqctl cannot reach it.
func brokerEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := ctlEval(fmt.Sprintf("application:get_env(rabbit, %s).", key))
	if err != nil {
		t.Skipf("rabbitmqctl cannot reach the broker (%v: %s): this test changes a broker setting for its length", err, out)
	}
	return strings.TrimSpace(out)
}

// setBrokerEnv sets the rabbit application's setting key to value on the
// local broker, and returns a function that puts back what get_env read
// before (old), unsetting it when it was undefined. The broker is shared:
// callers restore as soon as they can, and in t.Cleanup whatever happens.
func setBrokerEnv(t *testing.T, key string, value int) (restore func()) {
	t.Helper()
	old := brokerEnv(t, key)
	put := fmt.Sprintf("application:unset_env(rabbit, %s).", key)
	if v, ok := strings.CutPrefix(old, "{ok,"); ok {
		put = fmt.Sprintf("application:set_env(rabbit, %s, %s).", key, strings.TrimSuffix(v, "}"))
	} else if old != "undefined" {
		t.Fatalf("cannot read the broker's %s: %q", key, old)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if out, err := ctlEval(put); err != nil {
				t.Errorf("restore the broker's %s with %s: %v: %s", key, put, err, out)
			}
		})
	}
	t.Cleanup(restore)
	if out, err := ctlEval(fmt.Sprintf("application:set_env(rabbit, %s, %d).", key, value)); err != nil {
		t.Fatalf("set the broker's %s: %v: %s", key, err, out)
	}
	return restore
}

func ctlEval(expr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	out, err := brokertest.Ctl(ctx, "eval", expr).CombinedOutput()
	return string(out), err
}

// outcomes is an Observer that hands every outcome to a channel.
type outcomes chan runtime.Outcome

func (o outcomes) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }
func (o outcomes) Outcome(_ context.Context, out runtime.Outcome) {
	select {
	case o <- out:
	default:
	}
}

// TestConsumerTimeoutKeepsQueueConsumed: when the broker's consumer_timeout
// closes the channel under a handler that runs on, on a queue whose one
// slot it holds, the worker consumes again at once and a short job
// enqueued behind it runs while the long one still runs; the long job is
// not run a second time in this worker, the broker's copy of it burns no
// attempt, and it ends acked, reported once, when its run returns.
//
// The broker reads consumer_timeout when a channel opens, and checks it
// on the channel's tick (channel_tick_interval, a minute by default): the
// test sets a 5s timeout for as long as the worker takes to open its
// consuming channel, and a 1s tick until the timeout has struck.
func TestConsumerTimeoutKeepsQueueConsumed(t *testing.T) {
	requireBroker(t)
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".deferred.2000")
	q.Prefetch, q.Concurrency = 1, 1
	ctx := ctxT(t)
	long, err := runtime.Enqueue(ctx, p, q, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, q, job{N: 2}); err != nil {
		t.Fatal(err)
	}

	type run struct{ n, attempt int }
	runs := make(chan run, 10)
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	seen := make(outcomes, 100)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second), runtime.WithObserver(seen))
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- run{j.N, info.Attempt}
		if j.N == 1 {
			select { // the long job: it outlives its channel
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})

	restoreTick := setBrokerEnv(t, "channel_tick_interval", 1000)
	restoreTimeout := setBrokerEnv(t, "consumer_timeout", 5000)
	brokertest.Run(t, w)
	if r := within(t, runs, "the long job's run"); r != (run{1, 1}) {
		t.Fatalf("first run %+v, want job 1, attempt 1", r)
	}
	restoreTimeout() // the consuming channel has its 5s; later ones get the broker's own

	// The broker closes the channel 5s after the delivery (at its next
	// tick); the short job runs on the new consumer, the long one still
	// running.
	if r := within(t, runs, "the short job, while the long one still runs"); r != (run{2, 1}) {
		t.Fatalf("run %+v while the long job runs, want job 2, attempt 1 (the long job ran twice at once?)", r)
	}
	restoreTick()
	if o := within(t, seen, "the short job's outcome"); o.Kind != runtime.OutcomeAcked || o.JobID == long {
		t.Fatalf("outcome %v of job %s, want the short job acked", o.Kind, o.JobID)
	}

	releaseOnce.Do(func() { close(release) })
	o := within(t, seen, "the long job's outcome")
	if o.JobID != long || o.Kind != runtime.OutcomeAcked || o.Attempt != 1 {
		t.Fatalf("long job: outcome %v of job %s at attempt %d (settle error %v), want %s acked at attempt 1", o.Kind, o.JobID, o.Attempt, o.SettleErr, long)
	}
	select {
	case r := <-runs:
		t.Fatalf("another run %+v after the long job was acked", r)
	default:
	}
	select {
	case o := <-seen:
		t.Fatalf("another outcome %v of job %s", o.Kind, o.JobID)
	default:
	}
	ch := rawChannel(t)
	if n := queueLen(t, ch, q.Name); n != 0 {
		t.Errorf("%d jobs left on %s, want 0", n, q.Name)
	}
	if n := queueLen(t, ch, q.Name+".dead"); n != 0 {
		t.Errorf("%d jobs in %s.dead, want 0", n, q.Name)
	}
}
