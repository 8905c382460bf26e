package otelqueuey_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// TestEveryOutcomeItsCounter tells the observer one run of each outcome and
// checks that exactly that outcome's counter moved, besides started and
// in_flight (back to zero), failed when the handler failed, and the
// duration and latency histograms.
func TestEveryOutcomeItsCounter(t *testing.T) {
	errRun := errors.New("run failed")
	for _, c := range []struct {
		kind    runtime.OutcomeKind
		err     error
		counter string
	}{
		{runtime.OutcomeAcked, nil, "queuey.jobs.succeeded"},
		{runtime.OutcomeRetried, errRun, "queuey.jobs.retried"},
		{runtime.OutcomeDeferred, runtime.Defer(time.Second), "queuey.jobs.deferred"},
		{runtime.OutcomeDeadLettered, errRun, "queuey.jobs.dead_lettered"},
		{runtime.OutcomeRequeued, nil, "queuey.jobs.requeued"},
		{runtime.OutcomeAbandoned, nil, "queuey.jobs.abandoned"},
	} {
		t.Run(c.kind.String(), func(t *testing.T) {
			tel := newTelemetry(t, otelqueuey.Config{})
			env := &runtime.Envelope{ID: "j1", Queue: "q", Kind: runtime.KindOf[ping](), Attempt: 1, MaxAttempts: 3, EnqueuedAt: time.Now()}
			ctx := tel.inst.Start(context.Background(), env)
			tel.inst.Outcome(ctx, runtime.Outcome{Kind: c.kind, Queue: "q", JobID: "j1", JobKind: runtime.KindOf[ping](), Attempt: 1, Err: c.err})
			want := map[string]int64{
				"queuey.jobs.started":            1,
				"queuey.jobs.in_flight":          0,
				"queuey.job.duration#count":      1,
				"queuey.job.queue_latency#count": 1,
				c.counter:                        1,
			}
			if c.err != nil && c.kind != runtime.OutcomeDeferred {
				want["queuey.jobs.failed"] = 1
			}
			if got := tel.counts(t); !maps.Equal(got, want) {
				t.Errorf("metrics %v, want %v", got, want)
			}
			if spans := tel.spans.Ended(); len(spans) != 1 || !outcomeShown(spans[0], c.kind.String()) {
				t.Errorf("want one ended span showing outcome %q, got %d spans", c.kind, len(spans))
			}
		})
	}
	t.Run("redelivered", func(t *testing.T) {
		tel := newTelemetry(t, otelqueuey.Config{})
		env := &runtime.Envelope{ID: "j1", Queue: "q", Kind: runtime.KindOf[ping](), Attempt: 1}
		ctx := tel.inst.Start(context.Background(), env)
		tel.inst.Outcome(ctx, runtime.Outcome{Kind: runtime.OutcomeRedelivered, Queue: "q", JobID: "j1", JobKind: runtime.KindOf[ping]()})
		want := map[string]int64{"queuey.jobs.started": 1, "queuey.jobs.in_flight": 1, "queuey.jobs.redelivered": 1}
		if got := tel.counts(t); !maps.Equal(got, want) {
			t.Errorf("metrics %v, want %v", got, want)
		}
		if n := len(tel.spans.Ended()); n != 0 {
			t.Errorf("%d spans ended by a redelivery event, want 0: the run goes on", n)
		}
	})
}

// TestCountersEndToEnd runs jobs to each handler outcome on the memory
// backend and checks every counter's total.
func TestCountersEndToEnd(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(quietLog()))
	t.Cleanup(func() { b.Close() })
	tel := newTelemetry(t, otelqueuey.Config{})
	q := runtime.QueueConfig{Name: "otel.counters", Kind: runtime.KindOf[ping](), MaxAttempts: 3}
	p, w, settled := instrumented(t, tel, b, q)
	var deferred sync.Map
	runtime.Handle(w, q, func(ctx context.Context, j ping) error {
		info, _ := runtime.InfoFromContext(ctx)
		switch j.N {
		case 2:
			if info.Attempt == 1 {
				return errors.New("flaky")
			}
		case 3:
			if _, again := deferred.LoadOrStore(info.ID, true); !again {
				return runtime.Defer(time.Millisecond)
			}
		case 4:
			return runtime.Permanent(errors.New("bounce"))
		}
		return nil
	})
	if _, err := runtime.EnqueueMany(context.Background(), p, q, []ping{{N: 1}, {N: 2}, {N: 3}, {N: 4}}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	for range 6 {
		recvT(t, settled)
	}
	want := map[string]int64{
		"queuey.jobs.enqueued":           4,
		"queuey.jobs.started":            6,
		"queuey.jobs.succeeded":          3,
		"queuey.jobs.failed":             2,
		"queuey.jobs.retried":            1,
		"queuey.jobs.deferred":           1,
		"queuey.jobs.dead_lettered":      1,
		"queuey.jobs.in_flight":          0,
		"queuey.job.duration#count":      6,
		"queuey.job.queue_latency#count": 6,
	}
	if got := tel.counts(t); !maps.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
}

// TestCountsPerQueueAndKind enqueues, from several goroutines at once,
// jobs of three queues, one of them carrying two kinds, and checks that
// each queue and kind has its own count and that each producer span names
// its job's queue and kind: the attributes of a queue and kind are made once
// and found again, whichever goroutine saw them first.
func TestCountsPerQueueAndKind(t *testing.T) {
	tel := newTelemetry(t, otelqueuey.Config{})
	publish := tel.inst.ProducerMiddleware()(func(_ context.Context, envs []*runtime.Envelope, _ time.Duration) []error {
		return make([]error, len(envs))
	})
	type qk struct{ queue, kind string }
	jobs := []qk{{"a", "ping"}, {"b", "ping"}, {"shared", "ping"}, {"shared", "pong"}}
	const goroutines, each = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each * len(jobs) {
				j := jobs[(g+i)%len(jobs)]
				env := &runtime.Envelope{ID: j.queue + "/" + j.kind, Queue: j.queue, Kind: j.kind}
				if errs := publish(context.Background(), []*runtime.Envelope{env}, 0); errs[0] != nil {
					t.Error(errs[0])
				}
			}
		})
	}
	wg.Wait()

	got := map[qk]int64{}
	for _, m := range tel.metrics(t) {
		if m.Name != "queuey.jobs.enqueued" {
			continue
		}
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			q, _ := dp.Attributes.Value("queue")
			k, _ := dp.Attributes.Value("kind")
			got[qk{q.AsString(), k.AsString()}] += dp.Value
		}
	}
	want := map[qk]int64{}
	for _, j := range jobs {
		want[j] = goroutines * each
	}
	if !maps.Equal(got, want) {
		t.Errorf("queuey.jobs.enqueued by queue and kind = %v, want %v", got, want)
	}
	spans := tel.spans.Ended()
	if len(spans) != goroutines*each*len(jobs) {
		t.Fatalf("%d producer spans, want %d", len(spans), goroutines*each*len(jobs))
	}
	for _, s := range spans {
		var q, k, id string
		for _, a := range s.Attributes() {
			switch a.Key {
			case "messaging.destination.name":
				q = a.Value.AsString()
			case "queuey.job.kind":
				k = a.Value.AsString()
			case "messaging.message.id":
				id = a.Value.AsString()
			}
		}
		if s.Name() != "send "+q || id != q+"/"+k || !slices.Contains(jobs, qk{q, k}) {
			t.Fatalf("span %q of job %q has destination %q and kind %q", s.Name(), id, q, k)
		}
	}
}
