package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/runtime"
)

// TestDeadShowNamesTheFieldThatDidNotDecode: a job whose payload holds a
// string where the job has an int is dead-lettered by the worker, and
// dead show (and its --json) gives the reason naming the field by Go name
// and msgpack key, the type wanted and the value found, with the payload
// as it came; dead ls starts its reason column with the field.
func TestDeadShowNamesTheFieldThatDidNotDecode(t *testing.T) {
	t.Parallel()
	b, q, p := memoryQueue(t)
	payload, err := msgpack.Marshal(map[string]any{"To": "a@b.c", "N": "seven"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := runtime.Hooks(hooks.K).EnqueuePayload(ctxT(t), p, q, payload)
	if err != nil {
		t.Fatal(err)
	}
	w := runtime.NewWorker(b)
	ran := make(chan job, 1)
	runtime.Handle(w, q, func(_ context.Context, j job) error { ran <- j; return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	eventually.Nil(t, wait, func() error {
		st, err := b.QueueStats(ctxT(t), admin.Queue{Name: q.Name})
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Dead != 1 {
			return fmt.Errorf("%d jobs dead", st[0].Dead)
		}
		return nil
	}, "the job dead")
	cancel()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("worker did not stop")
	}
	select {
	case j := <-ran:
		t.Fatalf("handler ran %+v", j)
	default:
	}

	want := fmt.Sprintf(`decode cli_test.job payload: field "N" (msgpack key "N"): want int, found string "seven" (job %q on queue "q")`, id)
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "show", "q", id)
	if reason, ok := field(r.out, "reason:"); r.code != 0 || !ok || reason != want {
		t.Errorf("dead show (exit %d): reason %q, want %q, in:\n%s%s", r.code, reason, want, r.out, r.err)
	}
	if !strings.Contains(r.out, `"N": "seven"`) {
		t.Errorf("dead show: no payload as it came, in:\n%s", r.out)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "--json", "dead", "show", "q", id)
	var shown struct {
		Letters []admin.DeadLetterInfo `json:"letters"`
	}
	if err := json.Unmarshal([]byte(r.out), &shown); r.code != 0 || err != nil || len(shown.Letters) != 1 || shown.Letters[0].Reason != want {
		t.Errorf("dead show --json (exit %d, %v): %+v, want one letter with reason %q", r.code, err, shown, want)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q")
	if !strings.Contains(r.out, `decode cli_test.job payload: field "N" (msgpack key "N"): want int, f…`) {
		t.Errorf("dead ls: reason column does not start with the field, in:\n%s", r.out)
	}
}
