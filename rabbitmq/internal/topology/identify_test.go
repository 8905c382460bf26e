package topology

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
)

// listed returns args as the management API lists them: through JSON, so
// numbers are float64.
func listed(t *testing.T, args map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIdentifyHold: a hold queue is known by its arguments; a work queue
// named like one of another queue's hold queues is not one.
func TestIdentifyHold(t *testing.T) {
	var n Names
	classic, _, _ := n.Hold("q", admin.HoldRetry, time.Second, time.Second)
	quorum, _, _ := n.QuorumHold("q", admin.HoldDeferred, 3*time.Second, time.Second)
	longest, _, _ := n.Hold("q", admin.HoldDeferred, 24*24*time.Hour, time.Second)
	work := DeadLettered(Queue{Name: "q.retry.1000", Args: map[string]any{ArgQueueType: "classic", ArgMaxPriority: int32(10)}}, "q.retry.1000.dead")
	noExpires := map[string]any{}
	for k, v := range classic.Args {
		if k != ArgExpires {
			noExpires[k] = v
		}
	}
	for _, tc := range []struct {
		name, typ string
		args      map[string]any
		want      HoldInfo
		ok        bool
		why       string
	}{
		{name: classic.Name, typ: "classic", args: classic.Args, want: HoldInfo{"q", admin.HoldRetry, time.Second}, ok: true},
		{name: quorum.Name, typ: "quorum", args: quorum.Args, want: HoldInfo{"q", admin.HoldDeferred, 3 * time.Second}, ok: true},
		{name: longest.Name, typ: "classic", args: longest.Args, want: HoldInfo{"q", admin.HoldDeferred, 24 * 24 * time.Hour}, ok: true},
		{name: work.Name, typ: "classic", args: work.Args, why: "x-dead-letter-routing-key is q.retry.1000.dead"},
		{name: "q.retry.1000", typ: "classic", args: map[string]any{}, why: "has no"},
		{name: classic.Name, typ: "classic", args: noExpires, why: "no x-expires"},
		{name: classic.Name, typ: "quorum", args: classic.Args, why: "x-queue-type is classic"},
		{name: "q.retry.2000", typ: "classic", args: classic.Args, why: "x-message-ttl is 1000"},
		{name: "q.retry.01000", typ: "classic", args: classic.Args},
		{name: "q.retry", typ: "classic", args: classic.Args},
		{name: ".retry.1000", typ: "classic", args: classic.Args},
		{name: classic.Name, typ: "stream", args: classic.Args, why: "stream"},
	} {
		h, ok, why := n.IdentifyHold(tc.name, tc.typ, listed(t, tc.args))
		if ok != tc.ok || h != tc.want || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("IdentifyHold(%q, %s, %v) = %+v, %v, %q; want %+v, %v, %q", tc.name, tc.typ, tc.args, h, ok, why, tc.want, tc.ok, tc.why)
		}
	}
}

// TestIdentifyHoldComparesEveryArgument: every argument Hold and
// QuorumHold declare is compared, so none can be added without
// IdentifyHold knowing it.
func TestIdentifyHoldComparesEveryArgument(t *testing.T) {
	for _, args := range []map[string]any{classicHoldArgs("q", 1000), quorumHoldArgs("q", 1000)} {
		for k := range args {
			if !slices.Contains(argOrder, k) {
				t.Errorf("argument %s of a hold queue is not in argOrder: IdentifyHold would not compare it", k)
			}
		}
	}
}
