package rabbitmq_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestDeferralsCappedOnBroker: the count of a job's deferrals travels with
// it through the broker's hold queues, and a job deferred on every run is
// dead-lettered once the worker's cap is reached, with the reason.
func TestDeferralsCappedOnBroker(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".deferred.1000")
	const max = 2
	var runs atomic.Int64
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second), runtime.WithMaxDeferrals(max))
	runtime.Handle(w, q, func(context.Context, job) error {
		runs.Add(1)
		return runtime.Defer(time.Millisecond)
	})
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	stop := brokertest.Run(t, w)
	dead := deadLetters(t, b, q.Name, 1)
	stop()
	if !strings.Contains(dead[0].Reason, "deferred 2 times") {
		t.Errorf("dead letter's reason %q, want it to say the job was deferred 2 times", dead[0].Reason)
	}
	if n := runs.Load(); n != max+1 {
		t.Errorf("%d runs, want %d", n, max+1)
	}
}
