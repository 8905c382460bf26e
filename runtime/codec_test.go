package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type tagged struct {
	Name string
	Tags []string
	Meta map[string]int
}

// Jobs decode into values reused across jobs: a field missing from one
// payload must read as zero, never as what the job before it held.
func TestHandleDecodesEachJobFromZero(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "tagged", Kind: runtime.KindOf[tagged](), Prefetch: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan tagged, 2)
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, func(_ context.Context, j tagged) error { got <- j; return nil })
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx) }()
	defer func() { cancel(); <-errc }()

	if _, err := runtime.Enqueue(ctx, p, q, tagged{Name: "first", Tags: []string{"a"}, Meta: map[string]int{"k": 1}}); err != nil {
		t.Fatal(err)
	}
	if j := recvT(t, got); j.Name != "first" || len(j.Tags) != 1 || j.Meta["k"] != 1 {
		t.Fatalf("first job = %+v", j)
	}
	onlyName, err := msgpack.Marshal(map[string]string{"Name": "second"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnqueuePayload(ctx, q, onlyName); err != nil {
		t.Fatal(err)
	}
	if j := recvT(t, got); j.Name != "second" || j.Tags != nil || j.Meta != nil {
		t.Fatalf("second job = %+v, want only Name set", j)
	}
}

// EnqueuePayload's payload stays the caller's: changing it afterwards
// does not change the job.
func TestEnqueuePayloadCopiesThePayload(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "ping", Kind: runtime.KindOf[ping]()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, q)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := msgpack.Marshal(&ping{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnqueuePayload(ctx, q, payload); err != nil {
		t.Fatal(err)
	}
	clear(payload)
	sub, err := b.Consume(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	d := recvT(t, sub.Deliveries())
	var j ping
	if err := msgpack.Unmarshal(d.Envelope().Payload, &j); err != nil || j.N != 1 {
		t.Fatalf("stored job = %+v (%v), want N=1", j, err)
	}
}

type otherKey struct{}

// The Info a worker puts in a handler's context is found through derived
// contexts, and other values pass through it.
func TestInfoThroughDerivedContexts(t *testing.T) {
	t.Parallel()
	base := context.WithValue(context.Background(), otherKey{}, "other")
	ctx, cancel := context.WithCancel(runtime.WithInfo(base, runtime.Info{ID: "job-1", Attempt: 2}))
	defer cancel()
	info, ok := runtime.InfoFromContext(ctx)
	if !ok || info.ID != "job-1" || info.Attempt != 2 {
		t.Fatalf("InfoFromContext = %+v, %v", info, ok)
	}
	if v := ctx.Value(otherKey{}); v != "other" {
		t.Fatalf("other value = %v", v)
	}
	if _, ok := runtime.InfoFromContext(base); ok {
		t.Fatal("Info found outside a handler")
	}
	cancel()
	if ctx.Err() == nil {
		t.Fatal("derived context not cancelled")
	}
}

type reading struct {
	Sensor string
	Level  int8
}

// A payload whose number does not fit its field (enqueued raw, as another
// language's producer might send it) is dead-lettered at once with a
// reason that names the field, never handled with the number wrapped
// around.
func TestHandleDeadLettersNumbersThatDoNotFit(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops: startWorker's cleanup runs first
	q := runtime.QueueConfig{Name: "readings", Kind: runtime.KindOf[reading](), MaxAttempts: 3}
	rec := newRecorder()
	w := runtime.NewWorker(b, runtime.WithObserver(rec))
	handled := make(chan reading, 1)
	runtime.Handle(w, q, func(_ context.Context, r reading) error { handled <- r; return nil })
	p := producerOf(t, b, q)
	payload, err := msgpack.Marshal(map[string]any{"Sensor": "s1", "Level": 300})
	if err != nil {
		t.Fatal(err)
	}
	id, err := p.EnqueuePayload(context.Background(), q, payload)
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)

	want := fmt.Sprintf(`decode runtime_test.reading payload: field "Level" (msgpack key "Level"): want int8, found int 300, out of its range (job %q on queue "readings")`, id)
	o := rec.next(t)
	if o.Kind != runtime.OutcomeDeadLettered || o.JobID != id || o.Attempt != 1 || o.Reason != want {
		t.Fatalf("outcome = %v of %s on attempt %d, reason %q; want dead_lettered on attempt 1, reason %q", o.Kind, o.JobID, o.Attempt, o.Reason, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dead, err := b.DeadLetters(ctx, q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead.Letters) != 1 || dead.Letters[0].ID != id || dead.Letters[0].Reason != want {
		t.Fatalf("dead letters = %+v, want job %s with reason %q", dead.Letters, id, want)
	}
	select {
	case r := <-handled:
		t.Fatalf("handler ran with %+v", r)
	default:
	}
}
