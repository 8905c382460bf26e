package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/queueytest"
	"github.com/queuey/queuey/runtime"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 28, 23, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		spec string
		want time.Time
	}{
		{"0 6 * * *", time.Date(2026, 3, 29, 6, 0, 0, 0, time.UTC)}, // UTC, whatever the machine's zone
		{"@hourly", time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)},
		{"@every 90s", time.Date(2026, 3, 28, 23, 31, 30, 0, time.UTC)},
		{"@every 1h30m", time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
		{"@annually", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"0 0 29 2 *", time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"TZ=Europe/Berlin 0 6 * * *", time.Date(2026, 3, 29, 4, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Europe/Berlin @daily", time.Date(2026, 3, 29, 22, 0, 0, 0, time.UTC)},
		// 06:00 in Berlin is 04:00 UTC on 29 March 2026: summer time began
		// at 01:00 UTC that day.
		{"CRON_TZ=Europe/Berlin 0 6 * * *", time.Date(2026, 3, 29, 4, 0, 0, 0, time.UTC)},
		// 02:30 does not exist in Berlin on 29 March 2026: the library
		// skips it that day.
		{"CRON_TZ=Europe/Berlin 30 2 * * *", time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
	} {
		next, err := runtime.ParseSpec(c.spec)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", c.spec, err)
			continue
		}
		if got := next(at); !got.Equal(c.want) || got.Location() != time.UTC {
			t.Errorf("ParseSpec(%q) next after %v = %v, want %v in UTC", c.spec, at, got, c.want)
		}
	}
	for _, c := range []struct{ spec, says string }{
		{"", "five cron fields"},
		{"* * * *", "expected exactly 5 fields"},
		{"61 * * * *", "above maximum"},
		{"@fortnightly", "unrecognized descriptor"},
		{"CRON_TZ=Mars/Olympus 0 6 * * *", "provided bad location"},
		// The library reads these as an interval of one second, or
		// drops the fraction.
		{"@every 1500ms", "@every takes whole seconds, at least 1s: 1500ms would tick every 1s"},
		{"@every 0s", "@every takes whole seconds, at least 1s: 0s would tick every 1s"},
		{"@every -5s", "@every takes whole seconds, at least 1s: -5s would tick every 1s"},
		{"@every 1m0.5s", "@every takes whole seconds, at least 1s: 1m0.5s would tick every 1m0s"},
		// The library ignores a zone on an interval.
		{"CRON_TZ=Europe/Berlin @every 1h", "a zone has no meaning for @every"},
		// The library panics on a zone with no space after it.
		{"CRON_TZ=UTC", "CRON_TZ=UTC is followed by no schedule"},
		{"TZ=Europe/Berlin", "TZ=Europe/Berlin is followed by no schedule"},
		{"CRON_TZ=UTC ", "CRON_TZ=UTC is followed by no schedule"},
		// The library reads these as the zone of the time given: UTC.
		{"CRON_TZ=Local 0 6 * * *", "CRON_TZ=Local names no IANA zone"},
		{"CRON_TZ= 0 6 * * *", "CRON_TZ= names no IANA zone"},
		// Dates that never come: the library parses them and never ticks.
		{"0 0 30 2 *", "no date matches it, so it never ticks"},
		{"CRON_TZ=Europe/Berlin 0 6 31 4,6 *", "no date matches it"},
	} {
		_, err := runtime.ParseSpec(c.spec)
		if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("ParseSpec(%q) = %v, want ErrInvalidOption saying %q", c.spec, err, c.says)
		}
		var se *runtime.SpecError
		if !errors.As(err, &se) || se.Spec != c.spec || !strings.Contains(err.Error(), "want five cron fields") {
			t.Errorf("ParseSpec(%q) = %#v, want a *SpecError of the spec saying what is accepted", c.spec, err)
		}
	}
}

func TestPeriodicRefusals(t *testing.T) {
	t.Parallel()
	q := runtime.DefaultQueueConfig("sched.refusals")
	for _, c := range []struct {
		name    string
		s       runtime.Schedule
		backend runtime.Backend
		says    string
	}{
		{"bad spec", runtime.Schedule{Spec: "every hour"}, quietMemory(), `schedule of queue "sched.refusals"`},
		{"every fraction", runtime.Schedule{Name: "half", Spec: "@every 1500ms"}, quietMemory(),
			`schedule "half": spec "@every 1500ms": @every takes whole seconds, at least 1s: 1500ms would tick every 1s; want five cron fields`},
		{"every zero", runtime.Schedule{Spec: "@every 0s"}, quietMemory(), `schedule "sched.refusals": spec "@every 0s": @every takes whole seconds, at least 1s`},
		{"every negative", runtime.Schedule{Spec: "@every -5s"}, quietMemory(), `spec "@every -5s": @every takes whole seconds, at least 1s`},
		{"zone alone", runtime.Schedule{Spec: "CRON_TZ=UTC"}, quietMemory(), `spec "CRON_TZ=UTC": CRON_TZ=UTC is followed by no schedule`},
		{"bad name", runtime.Schedule{Name: "a b", Spec: "@hourly"}, quietMemory(), `schedule name "a b"`},
		{"bad missed", runtime.Schedule{Spec: "@hourly", Missed: "twice"}, quietMemory(), `Missed "twice"`},
		{"no leaser", runtime.Schedule{Spec: "@hourly"}, noLeaser{quietMemory()}, "does not implement runtime.Leaser"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.backend.Close()
			w := runtime.NewWorker(c.backend)
			runtime.Periodic(w, q, c.s, func() ping { return ping{} })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := w.Run(ctx)
			if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Run = %v, want ErrInvalidOption saying %q", err, c.says)
			}
		})
	}
}

// noLeaser hides a backend's Leaser.
type noLeaser struct{ runtime.Backend }

// startTicks runs n workers of b with schedule s onto q until the test
// ends; each tick's job says which worker fired it.
func startTicks(t *testing.T, b runtime.Backend, q runtime.QueueConfig, s runtime.Schedule, n int) <-chan tickRun {
	t.Helper()
	runs := make(chan tickRun, 100)
	for i := range n {
		w := runtime.NewWorker(b)
		runtime.Periodic(w, q, s, func() ping { return ping{N: i} })
		if i == 0 {
			runtime.Handle(w, q, func(ctx context.Context, j ping) error {
				info, _ := runtime.InfoFromContext(ctx)
				runs <- tickRun{ID: info.ID, Worker: j.N, Tick: info.Headers[runtime.HeaderTick]}
				return nil
			})
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	return runs
}

type tickRun struct {
	ID     string
	Worker int
	Tick   string
}

// TestPeriodicMemory: two workers of one MemoryBackend with one schedule:
// one fires each tick, one second apart, with the tick's ID and header.
func TestPeriodicMemory(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the workers stop
	q := runtime.DefaultQueueConfig("sched.memory")
	s := runtime.Schedule{Name: "every-second", Spec: "@every 1s"}
	runs := startTicks(t, b, q, s, 2)
	first, second := recvT(t, runs), recvT(t, runs)
	for _, r := range []tickRun{first, second} {
		if want := "every-second@" + r.Tick; r.ID != want {
			t.Errorf("tick job ID %q, want %q (the tick header is %q)", r.ID, want, r.Tick)
		}
	}
	t1, _ := time.Parse(time.RFC3339, first.Tick)
	t2, _ := time.Parse(time.RFC3339, second.Tick)
	if t2.Sub(t1) != time.Second {
		t.Errorf("ticks %s and %s, want one second apart", first.Tick, second.Tick)
	}
	if first.Worker != second.Worker {
		t.Errorf("ticks fired by workers %d and %d, want one worker while it holds the lease", first.Worker, second.Worker)
	}
}

// TestPeriodicMissed, on a test clock: a schedule "@every 1m" whose last
// tick was recorded at T0 and whose scheduler comes back at T0+1m+back
// fires, with MissedRunOnce, the missed tick T0+1m at once when the next,
// T0+2m, is further than it (back 10s), and leaves it to the next when the
// next is nearer and due within a minute (back 59s: the next is due 1s
// later, and firing both would run one catch-up twice back to back); with
// MissedSkip it fires no missed tick. Either way T0+2m fires on time, once.
func TestPeriodicMissed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		missed runtime.Missed
		back   time.Duration
		fired  bool // the missed tick T0+1m
	}{
		{runtime.MissedRunOnce, 10 * time.Second, true},
		{runtime.MissedRunOnce, 59 * time.Second, false},
		{runtime.MissedRunOnce, 30 * time.Second, false}, // half way: as near to one as to the other
		{runtime.MissedSkip, 10 * time.Second, false},
	} {
		t.Run(fmt.Sprintf("%s/back%v", c.missed, c.back), func(t *testing.T) {
			q := runtime.QueueConfig{Name: "sched.missed", Kind: runtime.KindOf[ping]()}
			b := queueytest.New(t, q)
			now := b.Clock().Now()
			t0 := now.Add(-time.Minute - c.back)
			ctx := context.Background()
			lease, err := b.AcquireLease(ctx, "schedule.missed")
			if err != nil {
				t.Fatal(err)
			}
			if err := lease.Advance(ctx, t0); err != nil {
				t.Fatal(err)
			}
			_ = lease.Release()
			w := runtime.NewWorker(b)
			runtime.Periodic(w, q, runtime.Schedule{Name: "missed", Spec: "@every 1m", Missed: c.missed}, func() ping { return ping{} })
			runtime.Handle(w, q, func(context.Context, ping) error { return nil })
			id := func(tick time.Time) string { return "missed@" + tick.UTC().Format(time.RFC3339) }

			var want []string
			if c.fired {
				want = []string{id(t0.Add(time.Minute))}
			}
			if got := ids(queueytest.RunReady(t, b, w)); !slices.Equal(got, want) {
				t.Fatalf("on the scheduler's return: ran %q, want %q", got, want)
			}
			b.Clock().Advance(t0.Add(2 * time.Minute).Sub(now))
			if got, want := ids(queueytest.RunReady(t, b, w)), []string{id(t0.Add(2 * time.Minute))}; !slices.Equal(got, want) {
				t.Fatalf("at the next tick: ran %q, want %q", got, want)
			}
		})
	}
}

// ids returns the job IDs of outs.
func ids(outs []queueytest.Outcome) []string {
	var s []string
	for _, o := range outs {
		s = append(s, o.ID)
	}
	return s
}

// TestHandleSchedule: a queue with a Schedule (the schedule= key) makes
// the worker that handles it enqueue a zero job at each tick, named after
// the queue.
func TestHandleSchedule(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "sched.handle", Kind: runtime.KindOf[ping](), Schedule: "@every 1s"}
	w := runtime.NewWorker(b)
	ids := make(chan string, 10)
	runtime.Handle(w, q, func(ctx context.Context, p ping) error {
		info, _ := runtime.InfoFromContext(ctx)
		if p != (ping{}) {
			t.Errorf("scheduled job %+v, want the zero value", p)
		}
		ids <- info.ID
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	id := recvT(t, ids)
	cancel()
	if err := recvT(t, done); err != nil {
		t.Errorf("Run: %v", err)
	}
	if !strings.HasPrefix(id, "sched.handle@") {
		t.Errorf("scheduled job ID %q, want sched.handle@<tick>", id)
	}
}

// TestPeriodicProducerMiddleware: a schedule's tick is enqueued through the
// worker's producer (WithProducer), whose middleware sees the tick's job
// and can add a header that the handler then reads beside the tick's own.
func TestPeriodicProducerMiddleware(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	t.Cleanup(func() { _ = b.Close() }) // after the worker stops
	q := runtime.DefaultQueueConfig("sched.middleware")
	published := make(chan string, 10)
	stamp := func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			for _, env := range envs {
				published <- env.ID
				env.Headers["stamped"] = "yes"
			}
			return next(ctx, envs, delay)
		}
	}
	p := runtime.NewProducerUndeclared(b)
	p.Use(stamp)
	w := runtime.NewWorker(b, runtime.WithProducer(p))
	runtime.Periodic(w, q, runtime.Schedule{Name: "stamped", Spec: "@every 1s"}, func() ping { return ping{N: 1} })
	headers := make(chan runtime.Info, 10)
	runtime.Handle(w, q, func(ctx context.Context, _ ping) error {
		info, _ := runtime.InfoFromContext(ctx)
		headers <- info
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := recvT(t, done); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	id := recvT(t, published)
	info := recvT(t, headers)
	if info.ID != id || !strings.HasPrefix(id, "stamped@") {
		t.Errorf("handled job %q, want the tick %q the middleware saw", info.ID, id)
	}
	if info.Headers["stamped"] != "yes" || info.Headers[runtime.HeaderTick] == "" {
		t.Errorf("tick job's headers %v, want stamped=yes and %s", info.Headers, runtime.HeaderTick)
	}
}

// TestHandleScheduleRefused: a queue whose Schedule is an interval the
// library would round makes Run fail, saying why and what is accepted,
// instead of ticking every second.
func TestHandleScheduleRefused(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"@every 1500ms", "@every 0s", "@every -5s"} {
		t.Run(spec, func(t *testing.T) {
			b := quietMemory()
			defer b.Close()
			q := runtime.QueueConfig{Name: "sched.refused", Kind: runtime.KindOf[ping](), Schedule: spec}
			w := runtime.NewWorker(b)
			runtime.Handle(w, q, func(context.Context, ping) error { return nil })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := w.Run(ctx)
			want := `queue "sched.refused": Schedule = "` + spec + `" (@every takes whole seconds, at least 1s`
			if !errors.Is(err, runtime.ErrInvalidConfig) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "want five cron fields") {
				t.Fatalf("Run = %v, want ErrInvalidConfig saying %q and what is accepted", err, want)
			}
		})
	}
}
