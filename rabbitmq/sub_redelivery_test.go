package rabbitmq_test

import (
	"context"
	"testing"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// outcomeLog is a runtime.Observer that passes on every outcome.
type outcomeLog chan runtime.Outcome

func (l outcomeLog) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }
func (l outcomeLog) Outcome(_ context.Context, o runtime.Outcome)                   { l <- o }

// TestRedeliveryObserved: a job left unsettled when its consumer closes
// comes back, and the worker that runs it tells its observers
// OutcomeRedelivered before the run's outcome, as attempt 2, on a classic
// queue (where the broker's redelivery is published again as a new copy)
// and on a quorum queue (which counts deliveries itself). The first
// delivery is not a redelivery, and the handler sees the job's own headers
// only.
func TestRedeliveryObserved(t *testing.T) {
	for _, qt := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(qt), func(t *testing.T) {
			b := dial(t, rabbitmq.Options{})
			q := runtime.DefaultQueueConfig(queueName(t))
			q.Kind, q.QueueType = runtime.KindOf[job](), qt
			if qt == runtime.QueueQuorum {
				q.MaxPriority = runtime.NoPriority
			}
			p, err := runtime.NewProducer(ctxT(t), b, q)
			if err != nil {
				t.Fatal(err)
			}
			id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithHeaders(map[string]string{"tenant": "t1"}))
			if err != nil {
				t.Fatal(err)
			}
			sub, err := b.Consume(ctxT(t), q)
			if err != nil {
				t.Fatal(err)
			}
			d := within(t, sub.Deliveries(), "the first delivery")
			rd, ok := d.(runtime.Redelivery)
			if !ok {
				t.Fatalf("delivery %T does not implement runtime.Redelivery", d)
			}
			if rd.Redelivered() {
				t.Error("first delivery reports a redelivery")
			}
			if err := sub.Close(); err != nil { // unsettled: the broker puts it back
				t.Fatal(err)
			}

			outcomes := make(outcomeLog, 8)
			headers := make(chan map[string]string, 1)
			w := runtime.NewWorker(b, runtime.WithObserver(outcomes))
			runtime.Handle(w, q, func(ctx context.Context, _ job) error {
				info, _ := runtime.InfoFromContext(ctx)
				headers <- info.Headers
				return nil
			})
			defer brokertest.Run(t, w)()
			for _, want := range []runtime.OutcomeKind{runtime.OutcomeRedelivered, runtime.OutcomeAcked} {
				o := within(t, outcomes, want.String())
				if o.Kind != want || o.JobID != id || o.Attempt != 2 {
					t.Fatalf("outcome %+v, want %v of job %s at attempt 2", o, want, id)
				}
			}
			if h := within(t, headers, "the handler's headers"); len(h) != 1 || h["tenant"] != "t1" {
				t.Errorf("handler saw headers %v, want only tenant=t1", h)
			}
		})
	}
}
