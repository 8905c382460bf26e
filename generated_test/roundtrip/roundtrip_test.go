package roundtrip

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/queuey/queuey/generated_test/roundtrip/other"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// TestMain checks for leaked goroutines. msgpack/v5 starts one goroutine
// per type it allocates through its value cache and never ends it: that one
// is by design, not a leak of the code under test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/vmihailenco/msgpack/v5.cachedValue.func1"))
}

// wait bounds every wait of these tests.
const wait = 10 * time.Second

func ptr[T any](v T) *T { return &v }

func full() Everything {
	addr := other.Address{Street: "1 Main St", Geo: other.Geo{Lat: 52.52, Lon: 13.405}, Tags: []string{"home"}, Level: 3}
	return Everything{
		Meta:      Meta{TraceID: "trace-1"},
		Extra:     &Extra{Note: "embedded by pointer"},
		ID:        "full",
		Bool:      true,
		Int:       math.MinInt64,
		Int8:      math.MinInt8,
		Int16:     math.MaxInt16,
		Int32:     math.MinInt32,
		Int64:     math.MaxInt64,
		Uint:      math.MaxUint,
		Uint8:     math.MaxUint8,
		Uint16:    math.MaxUint16,
		Uint32:    math.MaxUint32,
		Uint64:    math.MaxUint64,
		Float32:   -1.5e-38,
		Float64:   math.SmallestNonzeroFloat64,
		Rune:      'é',
		String:    "héllo\x00world",
		Bytes:     []byte{0, 1, 2, 255},
		Time:      time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("X", 3600)),
		Duration:  -90*time.Minute - time.Nanosecond,
		Ptr:       ptr(0),
		PtrString: ptr("pointed"),
		PtrStruct: &addr,
		Strings:   []string{"a", "", "c"},
		Lines:     []Line{{SKU: "x", Count: 1}, {SKU: "y", Count: -2}},
		Array:     [3]int{1, 2, 3},
		Map:       map[string]int{"a": 1, "b": -1},
		IntKeys:   map[int]string{-1: "minus one", 1 << 40: "big"},
		Nested:    map[string][]other.Address{"w": {addr, {}}},
		Address:   addr,
		Level:     -7,
		Children:  []*Everything{{ID: "child", Strings: []string{"nested"}}, nil},
		Renamed:   "renamed",
		OmitEmpty: "present",
	}
}

// TestRoundTrip enqueues jobs through the generated EnqueueEverything and
// checks that the generated HandleEverything hands over the same values.
func TestRoundTrip(t *testing.T) {
	withHidden := full()
	withHidden.ID = "not carried"
	withHidden.Skipped = "skipped"
	withHidden.unexported = "unexported"
	withHidden.Address = withHidden.Address.WithHidden("hidden")
	notCarried := full()
	notCarried.ID = "not carried"

	for _, tc := range []struct {
		name     string
		in, want Everything
	}{
		{"zero", Everything{ID: "zero"}, Everything{ID: "zero"}},
		{"full", full(), full()},
		{"empty collections", Everything{ID: "empty", Bytes: []byte{}, Strings: []string{}, Map: map[string]int{}},
			Everything{ID: "empty", Bytes: []byte{}, Strings: []string{}, Map: map[string]int{}}},
		// msgpack:"-" and unexported fields, here and in nested types,
		// are not carried.
		{"not carried", withHidden, notCarried},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := roundTrip(t, tc.in)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(Everything{}, other.Address{})); diff != "" {
				t.Errorf("handled job differs from the enqueued one (-want +got):\n%s", diff)
			}
		})
	}
}

// roundTrip enqueues in on a fresh memory backend and returns what the
// handler receives.
func roundTrip(t *testing.T, in Everything) Everything {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, got := handling(t, ctx, 1)
	if _, err := EnqueueEverything(ctx, p, in); err != nil {
		t.Fatalf("EnqueueEverything: %v", err)
	}
	select {
	case job := <-got:
		return job
	case <-ctx.Done():
		t.Fatalf("handler not called within %v", wait)
		return Everything{}
	}
}

// handling starts a worker on a fresh memory backend whose handler sends
// every job it gets to the returned channel (room for n), and returns a
// producer onto the same backend. Both end with the test.
func handling(t *testing.T, ctx context.Context, n int) (*runtime.Producer, <-chan Everything) {
	t.Helper()
	b := runtime.NewMemoryBackend()
	t.Cleanup(func() { b.Close() })
	got := make(chan Everything, n)
	w := runtime.NewWorker(b)
	HandleEverything(w, func(ctx context.Context, job Everything) error {
		got <- job
		return nil
	})
	t.Cleanup(runWorker(t, ctx, w))
	p, err := runtime.NewProducer(ctx, b, Queues()...)
	if err != nil {
		t.Fatal(err)
	}
	return p, got
}

// runWorker runs w until the returned function is called, which waits for
// Run to return.
func runWorker(t *testing.T, ctx context.Context, w *runtime.Worker) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(wait):
			t.Errorf("worker did not stop within %v", wait)
		}
	}
}

// TestUndecodablePayload checks the promise of the generated HandleX doc: a
// payload that does not decode is refused with a DecodeError, without
// running the handler.
func TestUndecodablePayload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.DiscardHandler)))
	defer b.Close()

	results := make(chan error, 1)
	observe := func(next runtime.HandlerFunc) runtime.HandlerFunc {
		return func(ctx context.Context, env *runtime.Envelope) error {
			err := next(ctx, env)
			results <- err
			return err
		}
	}
	ran := make(chan struct{}, 1)
	w := runtime.NewWorker(b)
	w.Use(observe)
	HandleEverything(w, func(context.Context, Everything) error {
		ran <- struct{}{}
		return nil
	})
	stop := runWorker(t, ctx, w)
	defer stop()

	p, err := runtime.NewProducer(ctx, b, EverythingQueue)
	if err != nil {
		t.Fatal(err)
	}
	// 0xc1 is the one byte msgpack never uses.
	if _, err := runtime.Hooks(hooks.K).EnqueuePayload(ctx, p, EverythingQueue, []byte{0xc1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-results:
		var de *runtime.DecodeError
		if !errors.As(err, &de) || de.Kind != "roundtrip.Everything" {
			t.Errorf("handler result %v, want a DecodeError of kind roundtrip.Everything", err)
		}
	case <-ctx.Done():
		t.Fatalf("no result within %v", wait)
	}
	select {
	case <-ran:
		t.Error("the handler ran on an undecodable payload")
	default:
	}
}

func TestGeneratedConfig(t *testing.T) {
	want := runtime.DefaultQueueConfig("roundtrip.everything")
	want.Kind, want.Prefetch, want.Concurrency, want.MaxAttempts = "roundtrip.Everything", 4, 4, 1
	if diff := cmp.Diff(want, EverythingQueue); diff != "" {
		t.Errorf("EverythingQueue (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]runtime.QueueConfig{want, BareQueue, FIFOQueue, LimitedQueue}, Queues()); diff != "" {
		t.Errorf("Queues() (-want +got):\n%s", diff)
	}
}

// TestGeneratedDefaults: the queue of a directive without keys is
// DefaultQueueConfig, which is a QueueConfig literal of the same name and
// kind, resolved; max_priority=0 is NoPriority, never a zero that would
// resolve to DefaultMaxPriority.
func TestGeneratedDefaults(t *testing.T) {
	want := runtime.DefaultQueueConfig("roundtrip.bare")
	want.Kind = "roundtrip.Bare"
	if diff := cmp.Diff(want, BareQueue); diff != "" {
		t.Errorf("BareQueue differs from DefaultQueueConfig (-want +got):\n%s", diff)
	}
	literal := runtime.QueueConfig{Name: "roundtrip.bare", Kind: "roundtrip.Bare"}.WithDefaults()
	if diff := cmp.Diff(literal, BareQueue); diff != "" {
		t.Errorf("BareQueue differs from a literal of its name and kind, resolved (-literal +got):\n%s", diff)
	}
	fifo := runtime.QueueConfig{Name: "roundtrip.fifo", Kind: "roundtrip.FIFO", MaxPriority: runtime.NoPriority}.WithDefaults()
	if diff := cmp.Diff(fifo, FIFOQueue); diff != "" {
		t.Errorf("FIFOQueue (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(FIFOQueue, FIFOQueue.WithDefaults()); diff != "" {
		t.Errorf("FIFOQueue changes under WithDefaults (-generated +resolved):\n%s", diff)
	}
}

// TestGeneratedLimits: limit=, rate= and limit_key= resolve into the
// generated queue's Limit, Rate and LimitKey, which Validate takes, and
// which the rate's annotation form gives back.
func TestGeneratedLimits(t *testing.T) {
	want := runtime.QueueConfig{
		Name: "roundtrip.limited", Kind: "roundtrip.Limited",
		Limit: 2, Rate: runtime.Rate{N: 50, Per: time.Second}, LimitKey: "Customer",
	}.WithDefaults()
	if diff := cmp.Diff(want, LimitedQueue); diff != "" {
		t.Errorf("LimitedQueue (-want +got):\n%s", diff)
	}
	if err := LimitedQueue.Validate(); err != nil {
		t.Errorf("LimitedQueue.Validate() = %v", err)
	}
	if !LimitedQueue.Limited() {
		t.Error("LimitedQueue.Limited() = false, want true")
	}
	if got := LimitedQueue.Rate.String(); got != "50/s" {
		t.Errorf("LimitedQueue.Rate.String() = %q, want the annotation's 50/s", got)
	}
	if BareQueue.Limited() {
		t.Errorf("BareQueue.Limited() = true (%+v), want no limit without the keys", BareQueue)
	}
}

// TestEnqueueManyRoundTrip sends several jobs through the generated
// EnqueueManyX and checks each arrives unchanged.
func TestEnqueueManyRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	in := []Everything{{ID: "zero"}, full(), {ID: "empty", Bytes: []byte{}, Strings: []string{}, Map: map[string]int{}}}
	p, got := handling(t, ctx, len(in))
	ids, err := EnqueueManyEverything(ctx, p, in)
	if err != nil || len(ids) != len(in) {
		t.Fatalf("EnqueueManyEverything = %v, %v; want %d IDs", ids, err, len(in))
	}
	byID := map[string]Everything{}
	for range in {
		select {
		case job := <-got:
			byID[job.ID] = job
		case <-ctx.Done():
			t.Fatalf("handled %d of %d jobs within %v", len(byID), len(in), wait)
		}
	}
	for _, want := range in {
		if diff := cmp.Diff(want, byID[want.ID], cmp.AllowUnexported(Everything{}, other.Address{})); diff != "" {
			t.Errorf("job %q differs (-want +got):\n%s", want.ID, diff)
		}
	}
}

// TestTimeKeepsInstantNotLocation pins what msgpack/v5 does with a
// time.Time, as the README says: the instant survives to the nanosecond,
// the location does not (it decodes in time.Local; the zero time in UTC).
func TestTimeKeepsInstantNotLocation(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 59, 123456789, time.FixedZone("X", 3600))
	got := roundTrip(t, Everything{ID: "time", Time: at})
	if !got.Time.Equal(at) {
		t.Errorf("handled time %v, want the instant %v", got.Time, at)
	}
	if got.Time.Location() != time.Local {
		t.Errorf("handled time in %v, want time.Local: msgpack/v5 keeps no location", got.Time.Location())
	}
	if name, _ := got.Time.Zone(); name == "X" && time.Local.String() != "X" {
		t.Errorf("handled time kept its zone X; update the README, which says it does not")
	}
	zero := roundTrip(t, Everything{ID: "zero time"})
	if !zero.Time.IsZero() || zero.Time.Location() != time.UTC {
		t.Errorf("handled zero time %v in %v, want the zero time in UTC", zero.Time, zero.Time.Location())
	}
}
