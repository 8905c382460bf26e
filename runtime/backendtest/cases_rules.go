package backendtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/runtime"
)

// testQueueRulesAuthority: the queue's config, as the worker registered
// it, rules the jobs on it whatever their envelopes say, as a producer in
// another language may write them. A failing job whose envelope says 9
// attempts runs the queue's 2, each run told 2 and the queue it came
// from, then is dead-lettered; a job of a priority above the queue's
// max_priority, and one carrying the tick header under an ID no schedule
// gives a tick or with a tick two hours ahead, are dead-lettered with a reason that names the rule, and
// the handler never runs them; a job behind them runs.
func testQueueRulesAuthority(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) {
		q.Prefetch, q.Concurrency = 1, 1
		q.MaxAttempts = 2
		q.MaxPriority = 3
		q.RetryMax = time.Second
	})
	payload := func(n int) []byte {
		b, err := msgpack.Marshal(&job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	publish := func(env *runtime.Envelope) {
		t.Helper()
		env.Queue, env.Kind, env.Attempt, env.EnqueuedAt = h.q.Name, h.q.Kind, 1, time.Now()
		if err := h.b.Publish(ctxT(t), env, 0); err != nil {
			t.Fatalf("publish %s: %v", env.ID, err)
		}
	}
	tick := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	publish(&runtime.Envelope{ID: "nine-attempts", Payload: payload(1), MaxAttempts: 9})
	publish(&runtime.Envelope{ID: "priority-9", Payload: payload(2), MaxAttempts: 2, Priority: 9})
	publish(&runtime.Envelope{ID: "forged", Payload: payload(3), MaxAttempts: 2, Headers: map[string]string{runtime.HeaderTick: tick}})
	ahead := time.Now().UTC().Add(2 * time.Hour).Truncate(time.Second).Format(time.RFC3339)
	publish(&runtime.Envelope{ID: "nightly@" + ahead, Payload: payload(3), MaxAttempts: 2, Headers: map[string]string{runtime.HeaderTick: ahead}})
	publish(&runtime.Envelope{ID: "good", Payload: payload(4), MaxAttempts: 2})
	runs := make(chan run, 10)
	h.start(func(ctx context.Context, j job) error {
		r := runOf(ctx, j)
		runs <- r
		if j.N == 1 {
			return errors.New("fails every time")
		}
		return nil
	})
	seen := map[int][]run{}
	for len(seen[1]) < 2 || len(seen[4]) < 1 {
		r := recv(t, runs, "the runs of the failing job and of the good one")
		seen[r.N] = append(seen[r.N], r)
	}
	for _, r := range seen[1] {
		if r.Info.MaxAttempts != 2 || r.Info.Queue != h.q.Name {
			t.Errorf("run %d of the failing job: told max attempts %d and queue %q, want 2 and %q", r.Attempt, r.Info.MaxAttempts, r.Info.Queue, h.q.Name)
		}
	}
	letters := h.deadLetters(4)
	reasons := map[string]string{}
	for _, dl := range letters {
		reasons[dl.ID] = dl.Reason
		if dl.ID == "nine-attempts" && (dl.Attempt != 2 || dl.MaxAttempts != 2) {
			t.Errorf("failing job dead after attempt %d of %d, want 2 of 2", dl.Attempt, dl.MaxAttempts)
		}
	}
	wantContains(t, reasons["nine-attempts"], "fails every time", "reason of the failing job")
	wantContains(t, reasons["priority-9"], fmt.Sprintf(`job "priority-9" on queue %q: priority 9, above the queue's max_priority=3`, h.q.Name), "reason of the job of priority 9")
	wantContains(t, reasons["forged"], `header "queuey-tick": the job's ID is not <schedule name>@`+tick, "reason of the forged tick")
	wantContains(t, reasons["nightly@"+ahead], "later than the worker's clock", "reason of the tick two hours ahead")
	select {
	case r := <-runs:
		t.Errorf("handler ran job %d (%s) too", r.N, r.Info.ID)
	case <-time.After(200 * time.Millisecond): // a window for a stray run, not a synchronisation
	}
}

// testPayloadIsOneValue: a job's payload is exactly one msgpack value of
// the job's type, on every backend: one with bytes after its value, a nil
// (which msgpack would decode into a zero job) and an empty one are
// dead-lettered with a reason that says so, and the handler never runs
// them; a good job behind them runs.
func testPayloadIsOneValue(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	good, err := msgpack.Marshal(&job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	for id, payload := range map[string][]byte{
		"after": append(append([]byte(nil), good...), 0x01),
		"nil":   {0xc0},
		"empty": nil,
	} {
		env := &runtime.Envelope{ID: id, Queue: h.q.Name, Kind: h.q.Kind, Payload: payload, Attempt: 1, MaxAttempts: 5, EnqueuedAt: time.Now()}
		if err := h.b.Publish(ctxT(t), env, 0); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	goodID := h.enqueue(job{N: 2})
	runs := make(chan run, 4)
	h.start(func(ctx context.Context, j job) error { runs <- runOf(ctx, j); return nil })
	if r := recv(t, runs, "the good job"); r.Info.ID != goodID {
		t.Fatalf("handler ran %s (%+v), want only %s", r.Info.ID, r, goodID)
	}
	want := map[string]string{
		"after": "malformed msgpack: 1 bytes after the value: a payload is exactly one msgpack value",
		"nil":   "want backendtest.job (a map of its fields), found nil",
		"empty": "malformed msgpack",
	}
	for _, dl := range h.deadLetters(3) {
		wantContains(t, dl.Reason, fmt.Sprintf("decode %s payload: ", h.q.Kind)+want[dl.ID], "reason of "+dl.ID)
	}
	select {
	case r := <-runs:
		t.Errorf("handler ran job %s too", r.Info.ID)
	case <-time.After(200 * time.Millisecond): // a window for a stray run, not a synchronisation
	}
}
