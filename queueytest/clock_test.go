package queueytest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/queueytest"
	qruntime "github.com/queuey/queuey/runtime"
)

type ping struct{ N int }

// hourly is a queue whose retries wait an hour, then two, four, eight.
var hourly = qruntime.QueueConfig{Name: "test.hourly", Kind: qruntime.KindOf[ping](), MaxAttempts: 5, RetryBase: time.Hour, RetryMax: 24 * time.Hour}

var hourlyJob = qruntime.Job[ping]{Queue: hourly}

// TestDrainRetriesToDeadLetter: a job that always fails runs its five
// attempts, fifteen hours of waits, in no real time, and its dead letter
// says it died at the end of them.
func TestDrainRetriesToDeadLetter(t *testing.T) {
	ctx := context.Background()
	b := queueytest.New(t, hourly)
	p := qruntime.NewProducerUndeclared(b)
	if _, err := qruntime.Enqueue(ctx, p, hourly, ping{}, qruntime.WithID("p")); err != nil {
		t.Fatal(err)
	}
	queueytest.RequireEnqueued(t, b, hourlyJob, queueytest.WithID("p"))
	w := qruntime.NewWorker(b)
	qruntime.Handle(w, hourly, func(ctx context.Context, job ping) error { return errors.New("down") })
	began, start := time.Now(), b.Clock().Now()
	got := queueytest.Drain(t, b, w)
	t.Logf("five attempts over %v of test time in %v", b.Clock().Now().Sub(start), time.Since(began))
	var want []queueytest.Outcome
	for i := range 4 {
		want = append(want, queueytest.Outcome{ID: "p", Queue: hourly.Name, Kind: hourly.Kind, Attempt: i + 1, Result: queueytest.Retried, Delay: time.Hour << i, Reason: "down"})
	}
	want = append(want, queueytest.Outcome{ID: "p", Queue: hourly.Name, Kind: hourly.Kind, Attempt: 5, Result: queueytest.DeadLettered, Reason: "down"})
	if !slices.Equal(got, want) {
		t.Errorf("outcomes:\n got %+v\nwant %+v", got, want)
	}
	if d := b.Clock().Now().Sub(start); d != 15*time.Hour {
		t.Errorf("the clock moved %v, want 15h", d)
	}
	// The letter is dead at the test clock's time, not the process's.
	if l, err := b.DeadLetter(ctx, hourly.Name, "p"); err != nil || !l.DeadLetteredAt.Equal(start.Add(15*time.Hour)) {
		t.Errorf("dead letter p dead-lettered at %v (%v), want %v on the test clock", l.DeadLetteredAt, err, start.Add(15*time.Hour))
	}
	// The worker runs on: a second Drain runs what was enqueued since.
	if _, err := qruntime.Enqueue(ctx, p, hourly, ping{}, qruntime.WithID("q"), qruntime.WithDelay(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := queueytest.Drain(t, b, w); len(got) != 5 || got[0].ID != "q" || got[4].Result != queueytest.DeadLettered {
		t.Errorf("second Drain = %+v, want the five runs of q", got)
	}
}

// TestDeferralEndsOnTime: a deferred job is back when the clock reaches
// the end of its wait, not a nanosecond before.
func TestDeferralEndsOnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := queueytest.New(t, hourly)
	if _, err := qruntime.Enqueue(ctx, qruntime.NewProducerUndeclared(b), hourly, ping{}, qruntime.WithID("d")); err != nil {
		t.Fatal(err)
	}
	w := qruntime.NewWorker(b)
	var runs atomic.Int32
	qruntime.Handle(w, hourly, func(ctx context.Context, job ping) error {
		if runs.Add(1) == 1 {
			return qruntime.Defer(10 * time.Minute)
		}
		return nil
	})
	got := queueytest.RunReady(t, b, w)
	if len(got) != 1 || got[0].Result != queueytest.Deferred || got[0].Delay != 10*time.Minute {
		t.Fatalf("first run: %+v, want deferred 10m", got)
	}
	b.Clock().Advance(10*time.Minute - time.Nanosecond)
	if got := queueytest.RunReady(t, b, w); len(got) != 0 {
		t.Fatalf("a nanosecond early: %+v, want no run", got)
	}
	b.Clock().Advance(time.Nanosecond)
	if got := queueytest.RunReady(t, b, w); len(got) != 1 || got[0].Result != queueytest.Done {
		t.Fatalf("on time: %+v, want one run, done", got)
	}
}

// TestScheduleTicks: a schedule ticks each time the clock passes its
// time, and only then.
func TestScheduleTicks(t *testing.T) {
	t.Parallel()
	b := queueytest.New(t)
	w := qruntime.NewWorker(b)
	var n atomic.Int32
	qruntime.Periodic(w, hourly, qruntime.Schedule{Name: "hourly", Spec: "@every 1h"}, func() ping { return ping{N: int(n.Add(1))} })
	var ran []int
	qruntime.Handle(w, hourly, func(ctx context.Context, job ping) error {
		ran = append(ran, job.N) // one run at a time: RunReady waits for it
		return nil
	})
	start := b.Clock().Now()
	if got := queueytest.RunReady(t, b, w); len(got) != 0 {
		t.Fatalf("before the first tick: %+v", got)
	}
	for i := range 3 {
		b.Clock().Advance(59 * time.Minute)
		if got := queueytest.RunReady(t, b, w); len(got) != 0 {
			t.Fatalf("tick %d a minute early: %+v", i+1, got)
		}
		b.Clock().Advance(time.Minute)
		got := queueytest.RunReady(t, b, w)
		want := fmt.Sprintf("hourly@%s", start.Add(time.Duration(i+1)*time.Hour).Format(time.RFC3339))
		if len(got) != 1 || got[0].ID != want || got[0].Result != queueytest.Done {
			t.Fatalf("tick %d: %+v, want %s done", i+1, got, want)
		}
	}
	if !slices.Equal(ran, []int{1, 2, 3}) {
		t.Errorf("jobs run: %v, want 1 2 3", ran)
	}
}
