package topology

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

func TestQuorumRungExamples(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		d, gran, want time.Duration
	}{
		{1, 0, s},
		{s, 0, s},
		{1200 * time.Millisecond, 0, 2 * s},
		{3 * s, 0, 3 * s},
		{8 * s, 0, 8 * s},
		{8*s + 1, 0, 10 * s},
		{16 * s, 0, 16 * s},
		{17 * s, 0, 20 * s},
		{33 * s, 0, 40 * s},
		{time.Hour, 0, 4096 * s},
		{1500 * time.Millisecond, 100 * time.Millisecond, 1600 * time.Millisecond},
		{900 * time.Millisecond, 100 * time.Millisecond, 1 * s},
		{runtime.MaxDeferral.Truncate(s), 0, runtime.MaxDeferral.Truncate(s)},
		{runtime.MaxDeferral.Truncate(s) - 1000*s, 0, runtime.MaxDeferral.Truncate(s)},
	} {
		got, err := QuorumRung(tc.d, tc.gran)
		if err != nil || got != tc.want {
			t.Errorf("QuorumRung(%v, %v) = %v, %v; want %v", tc.d, tc.gran, got, err, tc.want)
		}
	}
}

// TestQuorumRungNeverEarly checks every delay up to a day in steps of a
// granularity, and a spread up to MaxDeferral: the rung is never shorter
// than the delay, at most a quarter plus a granularity longer, on the
// ladder, and never shorter for a longer delay.
func TestQuorumRungNeverEarly(t *testing.T) {
	for _, gran := range []time.Duration{time.Millisecond, time.Second, time.Minute} {
		rungs := QuorumRungs(gran)
		check := func(d, prev time.Duration) time.Duration {
			got, err := QuorumRung(d, gran)
			if err != nil {
				t.Fatalf("QuorumRung(%v, %v): %v", d, gran, err)
			}
			if got < d {
				t.Fatalf("QuorumRung(%v, %v) = %v: early", d, gran, got)
			}
			if extra := got - d; extra > d/4+gran {
				t.Fatalf("QuorumRung(%v, %v) = %v: %v longer, want at most a quarter plus %v", d, gran, got, extra, gran)
			}
			if got < prev {
				t.Fatalf("QuorumRung(%v, %v) = %v, below %v for a shorter delay", d, gran, got, prev)
			}
			if _, ok := slices.BinarySearch(rungs, got); !ok {
				t.Fatalf("QuorumRung(%v, %v) = %v, not a rung", d, gran, got)
			}
			return got
		}
		var prev time.Duration
		for d := gran; d <= min(24*time.Hour, 200_000*gran); d += gran {
			prev = check(d, prev)
		}
		prev = 0
		for d := gran; d <= runtime.MaxDeferral; d = d*9/8 + 1 {
			prev = check(d, prev)
		}
		check(runtime.MaxDeferral.Truncate(gran), prev)
	}
}

func TestQuorumRungsBounded(t *testing.T) {
	for _, tc := range []struct {
		gran time.Duration
		max  int
	}{
		{time.Millisecond, 120},
		{time.Second, 81},
		{time.Hour, 33},
	} {
		rungs := QuorumRungs(tc.gran)
		if len(rungs) > tc.max {
			t.Errorf("granularity %v: %d rungs, want at most %d", tc.gran, len(rungs), tc.max)
		}
		if !slices.IsSorted(rungs) || len(slices.Compact(slices.Clone(rungs))) != len(rungs) {
			t.Errorf("granularity %v: rungs %v not strictly ascending", tc.gran, rungs)
		}
		if last := rungs[len(rungs)-1]; last != runtime.MaxDeferral.Truncate(tc.gran) {
			t.Errorf("granularity %v: last rung %v, want MaxDeferral truncated, %v", tc.gran, last, runtime.MaxDeferral.Truncate(tc.gran))
		}
	}
	if got := QuorumRungs(time.Second)[:12]; !slices.Equal(got, []time.Duration{
		1e9, 2e9, 3e9, 4e9, 5e9, 6e9, 7e9, 8e9, 10e9, 12e9, 14e9, 16e9,
	}) {
		t.Errorf("first rungs %v", got)
	}
}

func TestQuorumRungRefusals(t *testing.T) {
	for _, d := range []time.Duration{runtime.MaxDeferral + 1, runtime.MaxDeferral.Truncate(time.Second) + 1} {
		if _, err := QuorumRung(d, time.Second); !errors.Is(err, runtime.ErrDelayTooLong) {
			t.Errorf("QuorumRung(%v) error %v, want ErrDelayTooLong", d, err)
		}
		if _, _, err := (Names{}).QuorumHold("q", admin.HoldRetry, d, time.Second); !errors.Is(err, runtime.ErrDelayTooLong) {
			t.Errorf("QuorumHold(%v) error %v, want ErrDelayTooLong", d, err)
		}
	}
	if _, _, err := (Names{}).QuorumHold("q", admin.HoldDeferred, 0, time.Second); err == nil {
		t.Error("QuorumHold of a zero delay: no error")
	}
}

func TestQuorumHold(t *testing.T) {
	q, d, err := (Names{}).QuorumHold("emails.send", admin.HoldDeferred, 9*time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if q.Name != "emails.send.deferred.10000" || d != 10*time.Second {
		t.Errorf("hold %q for %v, want emails.send.deferred.10000 for 10s", q.Name, d)
	}
	want := amqp.Table{
		"x-queue-type":              "quorum",
		"x-message-ttl":             int32(10000),
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": "emails.send",
		"x-dead-letter-strategy":    "at-least-once",
		"x-overflow":                "reject-publish",
	}
	if diff := cmp.Diff(want, q.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	r, _, _ := (Names{RetrySuffix: "-r"}).QuorumHold("q", admin.HoldRetry, time.Second, time.Second)
	if r.Name != "q-r.1000" {
		t.Errorf("custom suffix hold %q, want q-r.1000", r.Name)
	}
}

func TestQuorumHolds(t *testing.T) {
	names := (Names{}).QuorumHolds("q", time.Second)
	if len(names) != 2*len(QuorumRungs(time.Second)) {
		t.Fatalf("%d names, want two per rung", len(names))
	}
	for _, d := range []time.Duration{time.Second, 9 * time.Second, time.Hour, runtime.MaxDeferral.Truncate(time.Second)} {
		for _, kind := range []admin.HoldKind{admin.HoldRetry, admin.HoldDeferred} {
			h, _, err := (Names{}).QuorumHold("q", kind, d, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(names, h.Name) {
				t.Errorf("hold %q of %v not among QuorumHolds", h.Name, d)
			}
		}
	}
}

func TestQuorumDead(t *testing.T) {
	q := (Names{}).QuorumDead("q")
	if diff := cmp.Diff(amqp.Table{"x-queue-type": "quorum"}, q.Args); q.Name != "q.dead" || diff != "" {
		t.Errorf("QuorumDead = %q %v", q.Name, q.Args)
	}
	if len((Names{}).Dead("q").Args) != 0 {
		t.Error("QuorumDead changed the classic dead queue's args")
	}
}

// TestUnlimited: only quorum queues of RabbitMQ 4.x get x-delivery-limit
// -1; on 3.x it would dead-letter on the first return.
func TestUnlimited(t *testing.T) {
	var n Names
	quorum := n.QuorumDead("q")
	classic := n.Dead("q")
	v3, v4 := Version{Major: 3, Minor: 10, Patch: 8}, Version{Major: 4, Minor: 0, Patch: 5}
	if got := v4.Unlimited(quorum).Args[ArgDeliveryLimit]; got != int32(NoDeliveryLimit) {
		t.Errorf("4.0.5 quorum queue: x-delivery-limit %v, want %d", got, NoDeliveryLimit)
	}
	if _, set := quorum.Args[ArgDeliveryLimit]; set {
		t.Errorf("Unlimited changed the queue it was given: %v", quorum.Args)
	}
	for _, tc := range []struct {
		v Version
		q Queue
	}{{v3, quorum}, {v4, classic}, {v3, classic}} {
		if _, set := tc.v.Unlimited(tc.q).Args[ArgDeliveryLimit]; set {
			t.Errorf("%v %s: declared with x-delivery-limit, want none", tc.v, tc.q.Args[ArgQueueType])
		}
	}
	kept := Queue{Name: "q", Args: amqp.Table{ArgQueueType: "quorum", ArgDeliveryLimit: int32(7)}}
	if got := v4.Unlimited(kept).Args[ArgDeliveryLimit]; got != int32(7) {
		t.Errorf("a limit already asked for became %v, want 7 kept", got)
	}
}
