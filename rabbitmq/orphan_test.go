package rabbitmq_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestOrphanOnLastAttemptSettlesItsCopy: a job on its last attempt
// (max_attempts=1) whose channel dies under its running handler is not
// dead-lettered when the broker delivers it again: the copy burns no
// attempt, and the run's outcome settles it, acked, reported once; on a
// classic and on a quorum queue.
func TestOrphanOnLastAttemptSettlesItsCopy(t *testing.T) {
	for _, typ := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(typ), func(t *testing.T) {
			logs := make(records, 4096)
			b := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
			q := runtime.DefaultQueueConfig(queueName(t, ".deferred.2000"))
			q.Kind, q.QueueType, q.MaxAttempts = runtime.KindOf[job](), typ, 1
			if typ == runtime.QueueQuorum {
				q.MaxPriority = runtime.NoPriority
			}
			p, err := runtime.NewProducer(ctxT(t), b, q)
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int32
			started := make(chan struct{}, 10)
			release := make(chan struct{})
			var once sync.Once
			seen := make(outcomes, 100)
			w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second), runtime.WithObserver(seen))
			runtime.Handle(w, q, func(ctx context.Context, j job) error {
				runs.Add(1)
				started <- struct{}{}
				select { // it outlives its channel
				case <-release:
				case <-ctx.Done():
				}
				return nil
			})
			brokertest.Run(t, w)
			t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the worker stops
			id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			within(t, started, "the run")
			for _, c := range rabbitmq.ConsumeConnections(b) {
				c.Close()
			}
			// The copy comes to the worker's new consumer, which defers
			// it while the run goes on; a dead-lettered copy would be
			// told to the observer now.
			waitDeferred(t, seen, logs)
			once.Do(func() { close(release) })
			o := within(t, seen, "the job's outcome")
			for !o.Kind.Settled() {
				o = within(t, seen, "the job's outcome")
			}
			if o.JobID != id || o.Kind != runtime.OutcomeAcked || o.Attempt != 1 {
				t.Fatalf("outcome %v of job %s at attempt %d (reason %q, settle error %v), want %s acked at attempt 1", o.Kind, o.JobID, o.Attempt, o.Reason, o.SettleErr, id)
			}
			if n := runs.Load(); n != 1 {
				t.Errorf("%d runs, want 1", n)
			}
			ch := rawChannel(t)
			if n := queueLen(t, ch, q.Name+".dead"); n != 0 {
				t.Errorf("%d jobs in %s.dead, want 0", n, q.Name)
			}
		})
	}
}

// waitDeferred waits until the worker logs that it deferred the copy of
// a job whose run goes on, failing if a job is reported settled first (a
// copy dead-lettered by its subscription is reported at once).
func waitDeferred(t *testing.T, seen outcomes, logs records) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case o := <-seen:
			if o.Kind.Settled() {
				t.Fatalf("outcome %v of job %s (reason %q) while its run goes on", o.Kind, o.JobID, o.Reason)
			}
		case rec := <-logs:
			if strings.Contains(rec.Message, "whose run still goes on here") {
				return
			}
		case <-deadline:
			t.Fatalf("timed out after %v waiting for the copy to be deferred", wait)
		}
	}
}
