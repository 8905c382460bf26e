package runtime_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

func TestQueueConfigValidate(t *testing.T) {
	t.Parallel()
	ok := runtime.DefaultQueueConfig("emails.send_email")
	if err := ok.Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*runtime.QueueConfig)
		want string
	}{
		{"empty name", func(q *runtime.QueueConfig) { q.Name = "" }, `Name = "", want a queue name of [A-Za-z0-9._-]+, at most 235 bytes`},
		{"bad name", func(q *runtime.QueueConfig) { q.Name = "a b" }, `Name = "a b"`},
		{"name too long", func(q *runtime.QueueConfig) { q.Name = strings.Repeat("q", runtime.MaxQueueNameLen+1) }, "at most 235 bytes (255, AMQP's limit, less 20 for the names derived from it, such as <name>.deferred.<ttl_ms>)"},
		{"scheduled name too long", func(q *runtime.QueueConfig) {
			q.Name, q.Schedule = strings.Repeat("q", runtime.MaxScheduleNameLen+1), "@hourly"
		}, "at most 200 bytes with a Schedule"},
		{"delay exchange too long", func(q *runtime.QueueConfig) { q.DelayExchange = strings.Repeat("x", 256) }, "DelayExchange"},
		{"prefetch", func(q *runtime.QueueConfig) { q.Prefetch = 70000 }, "Prefetch = 70000, want 1..65535"},
		{"concurrency", func(q *runtime.QueueConfig) { q.Concurrency = 11 }, "Concurrency = 11, want 1..Prefetch (10)"},
		{"priority", func(q *runtime.QueueConfig) { q.MaxPriority = 256 }, "MaxPriority = 256, want 1..255, 0 for DefaultMaxPriority (10), or NoPriority (-1) for none"},
		{"negative priority", func(q *runtime.QueueConfig) { q.MaxPriority = -2 }, "MaxPriority = -2, want 1..255"},
		{"attempts", func(q *runtime.QueueConfig) { q.MaxAttempts = 1001 }, "MaxAttempts = 1001, want 1..1000"},
		{"retry max", func(q *runtime.QueueConfig) { q.RetryBase, q.RetryMax = time.Minute, time.Second }, "RetryMax = 1s, want at least RetryBase (1m0s)"},
		{"retry too long", func(q *runtime.QueueConfig) { q.RetryMax = 1000 * time.Hour }, "RetryMax = 1000h0m0s, want at most 596h31m23s, MaxDeferral (596h31m23.6475s) rounded down to DefaultGranularity"},
		{"retry max past the longest wait", func(q *runtime.QueueConfig) { q.RetryMax = runtime.MaxDeferral - 500*time.Millisecond }, "RetryMax = 596h31m23.1475s, want at most 596h31m23s"},
		{"timeout", func(q *runtime.QueueConfig) { q.Timeout = -1 }, "Timeout = -1ns"},
		{"queue type", func(q *runtime.QueueConfig) { q.QueueType = "stream" }, `QueueType = "stream", want "classic" or "quorum"`},
		{"delay", func(q *runtime.QueueConfig) { q.Delay = "later" }, `Delay = "later", want "queue", "plugin" or "ladder"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := ok
			c.mod(&q)
			err := q.Validate()
			if !errors.Is(err, runtime.ErrInvalidConfig) {
				t.Fatalf("Validate() = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %q, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestQueueNameLimits: the longest queue name validates, alone and with a
// schedule up to the schedule name's limit.
func TestQueueNameLimits(t *testing.T) {
	t.Parallel()
	q := runtime.DefaultQueueConfig(strings.Repeat("q", runtime.MaxQueueNameLen))
	if err := q.Validate(); err != nil {
		t.Errorf("a %d-byte name: %v", len(q.Name), err)
	}
	q.Name, q.Schedule = strings.Repeat("q", runtime.MaxScheduleNameLen), "@hourly"
	if err := q.Validate(); err != nil {
		t.Errorf("a %d-byte name with a schedule: %v", len(q.Name), err)
	}
}

// TestDefaultsInOnePlace: DefaultQueueConfig is the zero config with a
// name, resolved; both carry the Default constants.
func TestDefaultsInOnePlace(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"q", "emails.send_email"} {
		if diff := cmp.Diff(runtime.QueueConfig{Name: name}.WithDefaults(), runtime.DefaultQueueConfig(name)); diff != "" {
			t.Errorf("DefaultQueueConfig(%q) differs from QueueConfig{Name: %[1]q}.WithDefaults() (-WithDefaults +DefaultQueueConfig):\n%s", name, diff)
		}
	}
	want := runtime.QueueConfig{
		Name:        "q",
		Prefetch:    runtime.DefaultPrefetch,
		Concurrency: runtime.DefaultPrefetch,
		MaxPriority: runtime.DefaultMaxPriority,
		MaxAttempts: runtime.DefaultMaxAttempts,
		RetryBase:   runtime.DefaultRetryBase,
		RetryMax:    runtime.DefaultRetryMax,
		QueueType:   runtime.QueueClassic,
	}
	if diff := cmp.Diff(want, runtime.DefaultQueueConfig("q")); diff != "" {
		t.Errorf("DefaultQueueConfig (-want +got):\n%s", diff)
	}
	if err := (runtime.QueueConfig{Name: "q"}).Validate(); err != nil {
		t.Errorf("zero config with a name: %v", err)
	}
}

// TestNoPriority: NoPriority survives WithDefaults and validates; zero is
// the default, not none.
func TestNoPriority(t *testing.T) {
	t.Parallel()
	q := runtime.QueueConfig{Name: "q", MaxPriority: runtime.NoPriority}.WithDefaults()
	if q.MaxPriority != runtime.NoPriority {
		t.Errorf("WithDefaults() of NoPriority: MaxPriority = %d, want NoPriority", q.MaxPriority)
	}
	if err := q.Validate(); err != nil {
		t.Errorf("NoPriority: %v", err)
	}
	if got := q.WithDefaults(); got != q {
		t.Errorf("WithDefaults() twice = %+v, want %+v", got, q)
	}
	if got := (runtime.QueueConfig{Name: "q"}).WithDefaults().MaxPriority; got != runtime.DefaultMaxPriority {
		t.Errorf("zero MaxPriority resolves to %d, want DefaultMaxPriority", got)
	}
}

func TestRetryDelay(t *testing.T) {
	t.Parallel()
	q := runtime.QueueConfig{Name: "q", RetryBase: time.Second, RetryMax: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := q.RetryDelay(i + 1); got != w {
			t.Errorf("RetryDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := q.RetryDelay(1000); got != 10*time.Second {
		t.Errorf("RetryDelay(1000) = %v, want the cap", got)
	}
}

// TestRetryDelaysAreWaits: with RetryMax at its largest, every retry
// delay of every attempt is a wait the backend's granularity accepts.
func TestRetryDelaysAreWaits(t *testing.T) {
	t.Parallel()
	q := runtime.QueueConfig{Name: "q", MaxAttempts: runtime.MaxAttemptsLimit, RetryMax: waits.Longest(runtime.DefaultGranularity)}
	if err := q.Validate(); err != nil {
		t.Fatalf("RetryMax = MaxDeferral rounded down to DefaultGranularity: %v", err)
	}
	for attempt := 1; attempt <= q.MaxAttempts; attempt++ {
		if _, err := waits.RoundAtLeastOne(q.RetryDelay(attempt), runtime.DefaultGranularity); err != nil {
			t.Fatalf("retry after attempt %d: %v", attempt, err)
		}
	}
}

func TestOutcomeErrors(t *testing.T) {
	t.Parallel()
	base := errors.New("card declined")
	p := runtime.Permanent(base)
	if !runtime.IsPermanent(p) || !errors.Is(p, base) {
		t.Errorf("Permanent(%v) = %v: not matched", base, p)
	}
	var de *runtime.DeferError
	if !errors.As(runtime.Defer(3*time.Second), &de) || de.Delay != 3*time.Second {
		t.Errorf("Defer(3s) not matched as DeferError{3s}")
	}
	if runtime.IsPermanent(base) {
		t.Errorf("plain error matched as permanent")
	}
}
