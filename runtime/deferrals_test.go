package runtime_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

// levelCounter is a slog.Handler that counts the records of one message
// by level.
type levelCounter struct {
	msg         string
	info, debug atomic.Int64
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	switch {
	case r.Message != h.msg && !strings.HasPrefix(r.Message, h.msg):
	case r.Level == slog.LevelInfo:
		h.info.Add(1)
	case r.Level == slog.LevelDebug:
		h.debug.Add(1)
	}
	return nil
}
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCounter) WithGroup(string) slog.Handler      { return h }

// TestDeferralsAreCapped: a job its handler defers on every run is
// dead-lettered once it has been deferred as often as the worker allows
// (DefaultMaxDeferrals unless WithMaxDeferrals says otherwise), with a
// reason that says so.
func TestDeferralsAreCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []runtime.WorkerOption
		max  int
	}{
		{"default", nil, runtime.DefaultMaxDeferrals},
		{"WithMaxDeferrals(3)", []runtime.WorkerOption{runtime.WithMaxDeferrals(3)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := runtime.QueueConfig{Name: "deferrals", Kind: runtime.KindOf[ping]()}
			b := queueytest.New(t, q)
			w := runtime.NewWorker(b, tc.opts...)
			runtime.Handle(w, q, func(context.Context, ping) error {
				return runtime.Defer(time.Second) // a 429 that never ends
			})
			p := producerOf(t, b, q)
			if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
				t.Fatal(err)
			}
			outs := queueytest.Drain(t, b, w)
			if len(outs) != tc.max+1 {
				t.Fatalf("%d runs, want %d", len(outs), tc.max+1)
			}
			for i, o := range outs[:tc.max] {
				if o.Result != queueytest.Deferred {
					t.Fatalf("run %d: %s, want deferred", i+1, o.Result)
				}
			}
			if o := outs[tc.max]; o.Result != queueytest.DeadLettered || !strings.Contains(o.Reason, "deferred "+strconv.Itoa(tc.max)+" times") {
				t.Fatalf("last run: %s (%q), want dead-lettered as deferred %d times", o.Result, o.Reason, tc.max)
			}
		})
	}
}

// TestDeferralsLogged: a burst of deferrals is logged at info level once
// per queue, and each at debug level; the dead letter of a job out of
// deferrals keeps no count, so that a re-drive starts it afresh.
func TestDeferralsLogged(t *testing.T) {
	t.Parallel()
	logs := &levelCounter{msg: "queuey: job"}
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(logs)))
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.QueueConfig{Name: "deferrals", Kind: runtime.KindOf[ping]()}
	const max = 2
	seen := make(chan runtime.Outcome, 10)
	w := runtime.NewWorker(b, runtime.WithMaxDeferrals(max), runtime.WithObserver(outcomeChan(seen)))
	runtime.Handle(w, q, func(context.Context, ping) error { return runtime.Defer(time.Millisecond) })
	p := producerOf(t, b, q)
	if _, err := runtime.Enqueue(context.Background(), p, q, ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	startWorker(t, w)
	for o := recvT(t, seen); o.Kind != runtime.OutcomeDeadLettered; o = recvT(t, seen) {
	}
	dead, err := b.DeadLetters(context.Background(), q.Name, admin.DeadLetterPage{})
	if err != nil || len(dead.Letters) != 1 {
		t.Fatalf("dead letters %+v (%v), want one", dead, err)
	}
	if h, ok := dead.Letters[0].Headers[runtime.HeaderDeferrals]; ok {
		t.Errorf("the dead letter keeps %s=%s", runtime.HeaderDeferrals, h)
	}
	if n := logs.info.Load(); n != 1 {
		t.Errorf("%d deferral lines at info level, want 1 for the burst", n)
	}
	if n := logs.debug.Load(); n != max {
		t.Errorf("%d deferral lines at debug level, want %d", n, max)
	}
}

// outcomeChan is an Observer that hands every outcome to a channel.
type outcomeChan chan runtime.Outcome

func (o outcomeChan) Start(ctx context.Context, _ *runtime.Envelope) context.Context { return ctx }
func (o outcomeChan) Outcome(_ context.Context, out runtime.Outcome)                 { o <- out }
