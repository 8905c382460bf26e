package topology

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

var v3 = Version{3, 10, 8}
var v4 = Version{4, 0, 1}

func TestWork(t *testing.T) {
	for _, tc := range []struct {
		name   string
		q      runtime.QueueConfig
		broker Version
		want   amqp.Table
		prio   Priorities
	}{
		{"classic with priority", runtime.QueueConfig{Name: "q", MaxPriority: 10}, v3,
			amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(10)}, PrioritiesAsAsked},
		{"classic with priority on 4.x", runtime.QueueConfig{Name: "q", MaxPriority: 10}, v4,
			amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(10)}, PrioritiesAsAsked},
		{"classic without priority", runtime.QueueConfig{Name: "q", MaxPriority: runtime.NoPriority}, v3,
			amqp.Table{"x-queue-type": "classic"}, PrioritiesAsAsked},
		{"literal has the default priority", runtime.QueueConfig{Name: "q"}, v3,
			amqp.Table{"x-queue-type": "classic", "x-max-priority": int32(runtime.DefaultMaxPriority)}, PrioritiesAsAsked},
		{"quorum on 3.x has none", runtime.QueueConfig{Name: "q", MaxPriority: 5, QueueType: runtime.QueueQuorum}, v3,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesNone},
		{"quorum on 4.x, high enough", runtime.QueueConfig{Name: "q", MaxPriority: 5, QueueType: runtime.QueueQuorum}, v4,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesTwoLevels},
		{"quorum on 4.x, 10", runtime.QueueConfig{Name: "q", MaxPriority: 10, QueueType: runtime.QueueQuorum}, v4,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesTwoLevels},
		{"quorum on 4.x, too low", runtime.QueueConfig{Name: "q", MaxPriority: 4, QueueType: runtime.QueueQuorum}, v4,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesTooLow},
		{"quorum without priority", runtime.QueueConfig{Name: "q", MaxPriority: runtime.NoPriority, QueueType: runtime.QueueQuorum}, v3,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesAsAsked},
		{"quorum without priority on 4.x", runtime.QueueConfig{Name: "q", MaxPriority: runtime.NoPriority, QueueType: runtime.QueueQuorum}, v4,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesAsAsked},
		{"quorum literal on 3.x has none", runtime.QueueConfig{Name: "q", QueueType: runtime.QueueQuorum}, v3,
			amqp.Table{"x-queue-type": "quorum"}, PrioritiesNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, prio := Work(tc.q.WithDefaults(), tc.broker)
			if got.Name != tc.q.Name {
				t.Errorf("name = %q, want %q", got.Name, tc.q.Name)
			}
			if diff := cmp.Diff(tc.want, got.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if prio != tc.prio {
				t.Errorf("priorities = %v, want %v", prio, tc.prio)
			}
		})
	}
}

func TestDead(t *testing.T) {
	if got := (Names{}).Dead("emails.send").Name; got != "emails.send.dead" {
		t.Errorf("default dead queue = %q", got)
	}
	if got := (Names{DeadSuffix: "-dlq"}).Dead("q").Name; got != "q-dlq" {
		t.Errorf("custom dead queue = %q", got)
	}
	if got := (Names{}).Dead("q").Args; len(got) != 0 {
		t.Errorf("dead queue args = %v, want none", got)
	}
}

func TestHold(t *testing.T) {
	for _, tc := range []struct {
		name        string
		names       Names
		kind        admin.HoldKind
		delay, gran time.Duration
		wantName    string
		wantTTL     int32
		wantExpires int64
	}{
		{"retry exact", Names{}, admin.HoldRetry, 2 * time.Second, 0, "q.retry.2000", 2000, 4000},
		{"deferred rounds up", Names{}, admin.HoldDeferred, 1500 * time.Millisecond, time.Second, "q.deferred.2000", 2000, 4000},
		{"tiny rounds to one unit", Names{}, admin.HoldDeferred, time.Nanosecond, time.Second, "q.deferred.1000", 1000, 2000},
		{"finer granularity", Names{}, admin.HoldRetry, 1234 * time.Millisecond, 100 * time.Millisecond, "q.retry.1300", 1300, 2600},
		{"below the margin", Names{}, admin.HoldRetry, 300 * time.Millisecond, 100 * time.Millisecond, "q.retry.300", 300, 1300},
		{"a millisecond", Names{}, admin.HoldDeferred, time.Millisecond, time.Millisecond, "q.deferred.1", 1, 1001},
		{"custom suffix", Names{RetrySuffix: "-wait"}, admin.HoldRetry, time.Minute, 0, "q-wait.60000", 60000, 120000},
		{"longest accepted", Names{}, admin.HoldDeferred, runtime.MaxDeferral.Truncate(time.Millisecond), time.Millisecond, "q.deferred.2147483647", 2147483647, 4294967294},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, d, err := tc.names.Hold("q", tc.kind, tc.delay, tc.gran)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.wantName {
				t.Errorf("name = %q, want %q", got.Name, tc.wantName)
			}
			if d != time.Duration(tc.wantTTL)*time.Millisecond {
				t.Errorf("rounded delay = %v, want %dms", d, tc.wantTTL)
			}
			want := amqp.Table{
				"x-queue-type":              "classic",
				"x-message-ttl":             tc.wantTTL,
				"x-dead-letter-exchange":    "",
				"x-dead-letter-routing-key": "q",
				"x-expires":                 tc.wantExpires,
			}
			if diff := cmp.Diff(want, got.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if err := got.Args.Validate(); err != nil {
				t.Errorf("args are not a valid AMQP table: %v", err)
			}
		})
	}
}

func TestHoldRefuses(t *testing.T) {
	_, _, err := Names{}.Hold("q", admin.HoldDeferred, runtime.MaxDeferral+time.Millisecond, time.Millisecond)
	if !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("above MaxDeferral: err = %v, want ErrDelayTooLong", err)
	}
	// Rounding up can push a delay just under the limit over it: refused,
	// never clamped.
	_, _, err = Names{}.Hold("q", admin.HoldDeferred, runtime.MaxDeferral-time.Millisecond, time.Hour)
	if !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("rounded above MaxDeferral: err = %v, want ErrDelayTooLong", err)
	}
	if _, _, err := (Names{}).Hold("q", admin.HoldRetry, 0, time.Second); err == nil {
		t.Error("zero delay got a hold queue")
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]Version{
		"3.10.8":       {3, 10, 8},
		"4.0.1":        {4, 0, 1},
		"4.1.0-beta.2": {4, 1, 0},
		"3.13":         {3, 13, 0},
		"4":            {4, 0, 0},
	} {
		got, err := ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x.1", "abc"} {
		if _, err := ParseVersion(in); err == nil {
			t.Errorf("ParseVersion(%q) succeeded", in)
		}
	}
	if (Version{3, 13, 0}).QuorumPriorities() || !(Version{4, 0, 0}).QuorumPriorities() {
		t.Error("QuorumPriorities: want false on 3.x, true on 4.x")
	}
}

// TestLongestDerivedName: with the default suffixes, the longest name
// derived from a queue name of runtime.MaxQueueNameLen bytes, the deferral
// hold queue of the longest wait at the finest granularity, is exactly
// AMQP's 255 bytes, and every other derived queue name is shorter: the
// queue-name limit leaves the room these names need, and no more.
func TestLongestDerivedName(t *testing.T) {
	name := strings.Repeat("q", runtime.MaxQueueNameLen)
	longest := runtime.MaxDeferral.Truncate(time.Millisecond)
	var n Names
	for _, kind := range []admin.HoldKind{admin.HoldDeferred, admin.HoldRetry} {
		for _, hold := range []func(string, admin.HoldKind, time.Duration, time.Duration) (Queue, time.Duration, error){n.Hold, n.QuorumHold} {
			q, _, err := hold(name, kind, longest, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.Name) > 255 || kind == admin.HoldDeferred && len(q.Name) != 255 {
				t.Errorf("%s hold queue of the longest wait is %d bytes, want 255 at most (exactly for the deferred one)", kind, len(q.Name))
			}
		}
	}
	if d := n.Dead(name).Name; len(d) > 255 {
		t.Errorf("dead-letter queue name is %d bytes", len(d))
	}
}
