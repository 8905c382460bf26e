package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type shipment struct {
	Count int64          `msgpack:"count"`
	Items []shipmentItem `msgpack:"items"`
	At    time.Time      `msgpack:"at"`
}

type shipmentItem struct {
	SKU string `msgpack:"sku"`
	Qty int64  `msgpack:"qty"`
}

// TestHandleDeadLettersPayloadsOfAnotherShape: a payload whose field does
// not decode into the job's type (a string where an int64 is, deep in a
// slice of structs too; a nil for a time.Time, on which msgpack panics)
// is dead-lettered on its first run, the handler never running, with a
// DecodeError naming the queue, the job, the field by Go name and by
// msgpack key, the type wanted and what the payload holds; the dead
// letter's reason is its text. A good job behind them runs.
func TestHandleDeadLettersPayloadsOfAnotherShape(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops: startWorker's cleanup runs first
	q := runtime.QueueConfig{Name: "shipments", Kind: runtime.KindOf[shipment](), MaxAttempts: 3, Prefetch: 1, Concurrency: 1}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	var mu sync.Mutex
	decodeErrs := map[string]*runtime.DecodeError{}
	w.Use(func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(ctx context.Context, env *runtime.Envelope) error {
			err := next(ctx, env)
			var de *runtime.DecodeError
			if errors.As(err, &de) {
				mu.Lock()
				decodeErrs[env.ID] = de
				mu.Unlock()
			}
			return err
		}
	})
	handled := make(chan shipment, 4)
	runtime.Handle(w, q, func(_ context.Context, s shipment) error { handled <- s; return nil })
	p := producerOf(t, b, q)

	type want struct{ field, key, want, found string }
	cases := []struct {
		payload map[string]any
		want    want
	}{
		{map[string]any{"count": "abc"}, want{"Count", "count", "int64", `string "abc"`}},
		{map[string]any{"count": 1, "items": []any{map[string]any{"qty": 1}, map[string]any{"qty": 2}, map[string]any{"sku": "c", "qty": "three"}}},
			want{"Items[2].Qty", "items[2].qty", "int64", `string "three"`}},
		{map[string]any{"items": map[string]any{"qty": 1}}, want{"Items", "items", "[]runtime_test.shipmentItem", "map of 1"}},
		{map[string]any{"at": nil}, want{"At", "at", "time.Time", "nil"}},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		payload, err := msgpack.Marshal(c.payload)
		if err != nil {
			t.Fatal(err)
		}
		if ids[i], err = p.EnqueuePayload(context.Background(), q, payload); err != nil {
			t.Fatal(err)
		}
	}
	goodID, err := runtime.Enqueue(context.Background(), p, q, shipment{Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)

	reasons := map[string]string{}
	for range len(cases) + 1 {
		o := rec.next(t)
		switch {
		case o.JobID == goodID:
			if o.Kind != runtime.OutcomeAcked {
				t.Errorf("the good job: %v (%s), want acked", o.Kind, o.Reason)
			}
		case o.Kind != runtime.OutcomeDeadLettered || o.Attempt != 1:
			t.Errorf("job %s: %v on attempt %d (%s), want dead-lettered on attempt 1", o.JobID, o.Kind, o.Attempt, o.Reason)
		default:
			reasons[o.JobID] = o.Reason
		}
	}
	if s := recvT(t, handled); s.Count != 2 {
		t.Errorf("handler ran %+v, want the good job alone", s)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, c := range cases {
		de := decodeErrs[ids[i]]
		if de == nil {
			t.Errorf("job %s (%v): no DecodeError", ids[i], c.payload)
			continue
		}
		got := want{de.Field, de.Key, de.Want, de.Found}
		if got != c.want || de.Queue != q.Name || de.ID != ids[i] || de.Kind != q.Kind || de.Err == nil {
			t.Errorf("job %s: DecodeError %+v, want %+v on queue %q, kind %q", ids[i], de, c.want, q.Name, q.Kind)
		}
		wantReason := fmt.Sprintf(`decode runtime_test.shipment payload: field %q (msgpack key %q): want %s, found %s`, c.want.field, c.want.key, c.want.want, c.want.found)
		wantJob := fmt.Sprintf(` (job %q on queue "shipments")`, ids[i])
		if r := reasons[ids[i]]; !strings.HasPrefix(r, wantReason) || !strings.HasSuffix(r, wantJob) || r != de.Error() {
			t.Errorf("job %s: reason %q, want %q…%q (the DecodeError's text, %q)", ids[i], r, wantReason, wantJob, de.Error())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dead, err := b.DeadLetters(ctx, q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Letters) != len(cases) {
		t.Fatalf("%d dead letters, want %d", len(dead.Letters), len(cases))
	}
	for _, l := range dead.Letters {
		if l.Reason != reasons[l.ID] {
			t.Errorf("dead letter %s: reason %q, want %q", l.ID, l.Reason, reasons[l.ID])
		}
	}
}

// TestDecodeErrorText: a DecodeError made by hand without a job or a
// located field reads as the decoder's error in context.
func TestDecodeErrorText(t *testing.T) {
	t.Parallel()
	e := &runtime.DecodeError{Kind: "orders.Order", Err: errors.New("malformed msgpack at byte 0: no value left")}
	if got, want := e.Error(), "decode orders.Order payload: malformed msgpack at byte 0: no value left"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
