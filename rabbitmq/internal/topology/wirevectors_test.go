package topology_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var update = flag.Bool("update", false, "rewrite testdata/wire/ladder from topology.Ladder")

// ladderVectorsDir holds the delay ladder's test vectors of
// docs/wire-format.md, beside the job messages' vectors in testdata/wire.
const ladderVectorsDir = "../../../testdata/wire/ladder"

// ladderVector is one file of testdata/wire/ladder: where a producer
// publishes a job enqueued with a delay onto a ladder-mode queue, or why
// it refuses to.
type ladderVector struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Queue       string `json:"queue"`
	QueueType   string `json:"queue_type"`
	// Broker is the version, major.minor, of the broker the ladder is
	// declared on: whether a quorum ladder is split depends on it.
	Broker string `json:"broker"`
	// Priority is the job's priority, 0..255.
	Priority int `json:"priority"`
	// Split says the ladder is split: quorum, on a 4.x broker. A wait of
	// priority 5 or more has its set bits written "h" on it.
	Split         bool  `json:"split"`
	DelayMS       int64 `json:"delay_ms"`
	GranularityMS int64 `json:"granularity_ms"`
	// Levels is N, the ladder's number of levels at the granularity.
	Levels int `json:"levels"`
	// LongestMS is the longest wait at the granularity: MaxDeferral
	// rounded down to a multiple of it.
	LongestMS int64 `json:"longest_ms"`
	// MaxQueueBytes is the longest queue name whose waits fit a routing
	// key: 255 − 2N.
	MaxQueueBytes int `json:"max_queue_bytes"`
	// WaitMS is the wait: the delay rounded up to the granularity.
	WaitMS  int64          `json:"wait_ms,omitempty"`
	Publish *ladderPublish `json:"publish,omitempty"`
	Binding *ladderBinding `json:"binding,omitempty"`
	// Refused is why a producer refuses the enqueue, publishing nothing:
	// "delay_too_long" or "name_too_long".
	Refused string `json:"refused,omitempty"`
}

type ladderPublish struct {
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
	Mandatory  bool   `json:"mandatory"`
}

// ladderBinding is the binding a worker gives the queue: what takes the
// wait off the ladder when it is due.
type ladderBinding struct {
	Exchange   string `json:"exchange"`
	RoutingKey string `json:"routing_key"`
}

// ladderCase is a vector before topology.Ladder fills it in.
type ladderCase struct {
	name, description string
	queue             string
	qt                runtime.QueueType
	delay, g          time.Duration
	broker            topology.Version
	priority          uint8
}

func ladderCases() []ladderCase {
	longest := waits.Longest(time.Second)
	// Unsplit ladders: 3.x, priority 0.
	v3 := topology.Version{Major: 3, Minor: 10}
	return []ladderCase{
		{"basic", "90s onto orders.v2 at 1s: 90 = 1011010 in binary, entering at level 6", "orders.v2", runtime.QueueClassic, 90 * time.Second, time.Second, v3, 0},
		{"quorum", "the same wait onto a quorum queue: the quorum ladder's level 6", "orders.v2", runtime.QueueQuorum, 90 * time.Second, time.Second, v3, 0},
		{"one_unit", "exactly one granularity: level 0, the lowest bit alone", "billing.charge_card", runtime.QueueClassic, time.Second, time.Second, v3, 0},
		{"round_up", "1.5s at 1s rounds up to 2 granularities: level 1", "billing.charge_card", runtime.QueueClassic, 1500 * time.Millisecond, time.Second, v3, 0},
		{"round_up_to_one", "1ms at 1s rounds up to one granularity, never to none", "billing.charge_card", runtime.QueueClassic, time.Millisecond, time.Second, v3, 0},
		{"power_of_two", "1024s at 1s, exactly 2^10 granularities: level 10, one bit set", "billing.charge_card", runtime.QueueClassic, 1024 * time.Second, time.Second, v3, 0},
		{"below_power_of_two", "1023s at 1s, 2^10 − 1 granularities: level 9, ten bits set", "billing.charge_card", runtime.QueueClassic, 1023 * time.Second, time.Second, v3, 0},
		{"fine_granularity", "150ms at 100ms rounds up to 200ms, 2 granularities, on the 25 levels of 100ms", "emails.send_email", runtime.QueueQuorum, 150 * time.Millisecond, 100 * time.Millisecond, v3, 0},
		{"hour_granularity", "2h and 1ms at 1h rounds up to 3h, on the 10 levels of 1h", "reports.monthly", runtime.QueueClassic, 2*time.Hour + time.Millisecond, time.Hour, v3, 0},
		{"max_delay", "the longest wait at 1s, MaxDeferral rounded down to the second: the top level, 21", "billing.charge_card", runtime.QueueClassic, longest, time.Second, v3, 0},
		{"max_delay_1ms", "the longest wait at 1ms, 2^31 − 1 ms: all 31 bits set, level 30", "billing.charge_card", runtime.QueueClassic, waits.Longest(time.Millisecond), time.Millisecond, v3, 0},
		{"too_long", "1ms more than the longest wait at 1s rounds up past MaxDeferral: refused, never clamped", "billing.charge_card", runtime.QueueClassic, longest + time.Millisecond, time.Second, v3, 0},
		{"too_long_1ms", "1ms more than the longest wait at 1ms: refused", "billing.charge_card", runtime.QueueClassic, waits.Longest(time.Millisecond) + time.Millisecond, time.Millisecond, v3, 0},
		{"longest_name", "a name of 211 bytes, the longest at 1s: the routing key is 255 bytes, an AMQP short string's most", strings.Repeat("q", names.MaxLadderQueue(waits.Levels(time.Second))), runtime.QueueClassic, 5 * time.Second, time.Second, v3, 0},
		{"name_too_long", "a name of 212 bytes at 1s: its routing key would be 256 bytes, refused", strings.Repeat("q", names.MaxLadderQueue(waits.Levels(time.Second))+1), runtime.QueueClassic, 5 * time.Second, time.Second, v3, 0},
		{"name_too_long_1ms", "a name of 194 bytes at 1ms, whose 31 levels leave 193: refused", strings.Repeat("q", names.MaxLadderQueue(waits.Levels(time.Millisecond))+1), runtime.QueueClassic, 5 * time.Second, time.Millisecond, v3, 0},
	}
}

// splitCases are the vectors of priorities: a quorum ladder on 4.x is
// split, a classic one and a 3.x one are not.
func splitCases() []ladderCase {
	v4 := topology.Version{Major: 4, Minor: 0}
	v3 := topology.Version{Major: 3, Minor: 10}
	return []ladderCase{
		{"split_priority_0", "90s onto a quorum queue on 4.x, priority 0: the split ladder's bits are 1", "orders.v2", runtime.QueueQuorum, 90 * time.Second, time.Second, v4, 0},
		{"split_priority_4", "priority 4, the highest normal one on 4.x: bits 1", "orders.v2", runtime.QueueQuorum, 90 * time.Second, time.Second, v4, 4},
		{"split_priority_5", "priority 5, the least high one on 4.x: bits h, through the levels' .hi queues", "orders.v2", runtime.QueueQuorum, 90 * time.Second, time.Second, v4, 5},
		{"split_priority_9", "priority 9 on 4.x at 100ms: 150ms rounds up to 2 granularities, bit h at level 1", "emails.send_email", runtime.QueueQuorum, 150 * time.Millisecond, 100 * time.Millisecond, v4, 9},
		{"classic_4x_priority_9", "a classic ladder on 4.x is not split: priority 9 has bits 1", "orders.v2", runtime.QueueClassic, 90 * time.Second, time.Second, v4, 9},
		{"quorum_3x_priority_9", "a quorum ladder on 3.x is not split: priority 9 has bits 1", "orders.v2", runtime.QueueQuorum, 90 * time.Second, time.Second, v3, 9},
	}
}

// vectorOf is c's vector, as topology.Ladder makes it.
func vectorOf(t *testing.T, c ladderCase) ladderVector {
	t.Helper()
	broker := c.broker
	l := topology.NewLadder(c.qt, c.g, broker)
	v := ladderVector{
		Name: c.name, Description: c.description, Queue: c.queue, QueueType: string(c.qt),
		Broker: fmt.Sprintf("%d.%d", broker.Major, broker.Minor), Priority: int(c.priority), Split: l.Split,
		DelayMS: c.delay.Milliseconds(), GranularityMS: c.g.Milliseconds(),
		Levels: l.Levels, LongestMS: waits.Longest(c.g).Milliseconds(), MaxQueueBytes: names.MaxLadderQueue(l.Levels),
	}
	if c.delay%time.Millisecond != 0 {
		t.Fatalf("%s: delay %v is not whole milliseconds", c.name, c.delay)
	}
	ex, key, err := l.Wait(c.queue, c.delay, c.priority)
	switch {
	case errors.Is(err, runtime.ErrDelayTooLong):
		v.Refused = "delay_too_long"
		return v
	case err != nil:
		t.Fatalf("%s: Wait: %v", c.name, err)
	case l.KeyLen(c.queue) > names.MaxShortString:
		v.Refused = "name_too_long"
		return v
	}
	wait, err := waits.RoundAtLeastOne(c.delay, c.g)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	b := l.QueueBinding(c.queue)
	v.WaitMS = wait.Milliseconds()
	v.Publish = &ladderPublish{Exchange: ex, RoutingKey: key, Mandatory: true}
	v.Binding = &ladderBinding{Exchange: b.Source, RoutingKey: b.Key}
	return v
}

func marshalLadder(t *testing.T, v ladderVector) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestLadderVectors writes testdata/wire/ladder with -update, and
// otherwise checks that every file there is what topology.Ladder, the
// code the workers run, makes of its case, and that it follows the rules
// of docs/wire-format.md ("The ladder"), computed here apart from
// topology: the vectors the clients test against cannot drift from the
// code, nor from the spec.
func TestLadderVectors(t *testing.T) {
	want := map[string][]byte{}
	for _, c := range append(ladderCases(), splitCases()...) {
		want[c.name+".json"] = marshalLadder(t, vectorOf(t, c))
	}
	if *update {
		if err := os.RemoveAll(ladderVectorsDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(ladderVectorsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(ladderVectorsDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	files, err := filepath.Glob(filepath.Join(ladderVectorsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got, wantNames []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(got)
	slices.Sort(wantNames)
	if !slices.Equal(got, wantNames) {
		t.Errorf("testdata/wire/ladder holds %v, want %v (go test ./rabbitmq/internal/topology/ -run LadderVectors -update)", got, wantNames)
	}
	for name, b := range want {
		file, err := os.ReadFile(filepath.Join(ladderVectorsDir, name))
		if err != nil {
			t.Errorf("%v (go test ./rabbitmq/internal/topology/ -run LadderVectors -update)", err)
			continue
		}
		if !bytes.Equal(file, b) {
			t.Errorf("testdata/wire/ladder/%s differs from what topology.Ladder makes (go test ./rabbitmq/internal/topology/ -run LadderVectors -update):\n%s\nwant\n%s", name, file, b)
		}
		var v ladderVector
		if err := json.Unmarshal(file, &v); err != nil {
			t.Errorf("testdata/wire/ladder/%s: %v", name, err)
			continue
		}
		for _, broken := range ladderSpecRules(v) {
			t.Errorf("testdata/wire/ladder/%s: %s", name, broken)
		}
	}
}

// ladderSpecRules returns the rules of docs/wire-format.md that v breaks,
// each worked out from the page's words alone: N is the bit length of the
// longest wait in granularities, the longest wait is MaxDeferral rounded
// down to the granularity, a name is at most 255 − 2N bytes, the wait is
// the delay rounded up to the granularity and at least one, the key is its
// N bits, most significant first, then the name, published mandatory to
// the level of the highest set bit, and the queue binds the delivery
// exchange with N "*" words and its name.
func ladderSpecRules(v ladderVector) []string {
	var broken []string
	bad := func(format string, args ...any) { broken = append(broken, fmt.Sprintf(format, args...)) }
	const maxDeferralNS = (1<<32 - 1) * 1_000_000 / 2
	g := v.GranularityMS
	if g < 1 || g > 3_600_000 {
		bad("granularity %d ms, want 1..3600000", g)
		return broken
	}
	units := uint64(maxDeferralNS / (g * 1_000_000))
	if n := bits.Len64(units); v.Levels != n {
		bad("levels %d, want %d: the bit length of %d granularities", v.Levels, n, units)
	}
	if longest := int64(units) * g; v.LongestMS != longest {
		bad("longest_ms %d, want %d", v.LongestMS, longest)
	}
	if max := 255 - 2*v.Levels; v.MaxQueueBytes != max {
		bad("max_queue_bytes %d, want 255 − 2N = %d", v.MaxQueueBytes, max)
	}
	if v.QueueType != "classic" && v.QueueType != "quorum" {
		bad("queue_type %q", v.QueueType)
	}
	major, _, ok := strings.Cut(v.Broker, ".")
	m, err := strconv.Atoi(major)
	if !ok || err != nil || m < 3 {
		bad("broker %q, want a version major.minor, 3.x or later", v.Broker)
	}
	if v.Priority < 0 || v.Priority > 255 {
		bad("priority %d, want 0..255", v.Priority)
	}
	// A ladder is split when it is a quorum one on a 4.x broker; on a
	// split ladder the set bits of a wait of priority 5 and above are "h".
	split := v.QueueType == "quorum" && m >= 4
	if v.Split != split {
		bad("split %v, want %v: a ladder is split when quorum on a 4.x broker", v.Split, split)
	}
	one := "1"
	if split && v.Priority >= 5 {
		one = "h"
	}
	wait := max((v.DelayMS+g-1)/g*g, g)
	switch {
	case wait > v.LongestMS:
		if v.Refused != "delay_too_long" || v.Publish != nil {
			bad("a wait of %d ms, above the longest, %d ms: want refused delay_too_long, got %q, publish %v", wait, v.LongestMS, v.Refused, v.Publish)
		}
		return broken
	case len(v.Queue) > v.MaxQueueBytes:
		if v.Refused != "name_too_long" || v.Publish != nil {
			bad("a name of %d bytes, above %d: want refused name_too_long, got %q, publish %v", len(v.Queue), v.MaxQueueBytes, v.Refused, v.Publish)
		}
		return broken
	case v.Refused != "" || v.Publish == nil || v.Binding == nil:
		bad("refused %q, publish %v, binding %v: want a publish and a binding", v.Refused, v.Publish, v.Binding)
		return broken
	}
	if v.WaitMS != wait {
		bad("wait_ms %d, want the delay %d ms rounded up to %d ms: %d", v.WaitMS, v.DelayMS, g, wait)
	}
	u := wait / g
	var words []string
	for i := v.Levels - 1; i >= 0; i-- {
		if u>>i&1 == 1 {
			words = append(words, one)
		} else {
			words = append(words, "0")
		}
	}
	prefix := fmt.Sprintf("queuey.ladder.%s.%dms", v.QueueType, g)
	want := ladderPublish{
		Exchange:   fmt.Sprintf("%s.%02d", prefix, bits.Len64(uint64(u))-1),
		RoutingKey: strings.Join(words, ".") + "." + v.Queue,
		Mandatory:  true,
	}
	if *v.Publish != want {
		bad("publish %+v, want %+v", *v.Publish, want)
	}
	if len(v.Publish.RoutingKey) > 255 {
		bad("routing key of %d bytes, above 255", len(v.Publish.RoutingKey))
	}
	wantBinding := ladderBinding{Exchange: prefix + ".deliver", RoutingKey: strings.Repeat("*.", v.Levels) + v.Queue}
	if *v.Binding != wantBinding {
		bad("binding %+v, want %+v", *v.Binding, wantBinding)
	}
	return broken
}

// TestLadderSpecRulesCatchABrokenVector: each rule of ladderSpecRules
// fails a vector that breaks it.
func TestLadderSpecRulesCatchABrokenVector(t *testing.T) {
	good := vectorOf(t, ladderCases()[0])
	if broken := ladderSpecRules(good); len(broken) > 0 {
		t.Fatalf("the basic vector breaks %v", broken)
	}
	for name, change := range map[string]func(v *ladderVector){
		"levels":          func(v *ladderVector) { v.Levels++ },
		"longest":         func(v *ladderVector) { v.LongestMS-- },
		"max name":        func(v *ladderVector) { v.MaxQueueBytes = 235 },
		"wait":            func(v *ladderVector) { v.WaitMS += v.GranularityMS },
		"exchange":        func(v *ladderVector) { v.Publish.Exchange = strings.Replace(v.Publish.Exchange, ".06", ".07", 1) },
		"bits":            func(v *ladderVector) { v.Publish.RoutingKey = "1" + v.Publish.RoutingKey[1:] },
		"least first":     func(v *ladderVector) { v.Publish.RoutingKey = reverseBits(v.Publish.RoutingKey, v.Levels) },
		"not mandatory":   func(v *ladderVector) { v.Publish.Mandatory = false },
		"binding by #":    func(v *ladderVector) { v.Binding.RoutingKey = "#." + v.Queue },
		"deliver":         func(v *ladderVector) { v.Binding.Exchange = "queuey.ladder.classic.1000ms.00" },
		"too long taken":  func(v *ladderVector) { v.DelayMS = v.LongestMS + 1 },
		"long name taken": func(v *ladderVector) { v.Queue = strings.Repeat("q", 212) },
		"refused":         func(v *ladderVector) { v.Refused = "delay_too_long" },
		"split classic":   func(v *ladderVector) { v.Split = true },
		"split on 3.x":    func(v *ladderVector) { v.QueueType, v.Split = "quorum", true },
		"no broker":       func(v *ladderVector) { v.Broker = "" },
		"h unsplit": func(v *ladderVector) {
			v.Priority = 9
			v.Publish.RoutingKey = strings.ReplaceAll(v.Publish.RoutingKey, "1.", "h.")
		},
	} {
		v := good
		p, b := *good.Publish, *good.Binding
		v.Publish, v.Binding = &p, &b
		change(&v)
		if len(ladderSpecRules(v)) == 0 {
			t.Errorf("%s: a broken vector passes", name)
		}
	}
	high := vectorOf(t, splitCases()[2])
	if broken := ladderSpecRules(high); len(broken) > 0 || !strings.Contains(high.Publish.RoutingKey, "h.") {
		t.Fatalf("the split_priority_5 vector breaks %v, or has no bit h: %s", broken, high.Publish.RoutingKey)
	}
	for name, change := range map[string]func(v *ladderVector){
		"1 on split": func(v *ladderVector) { v.Publish.RoutingKey = strings.ReplaceAll(v.Publish.RoutingKey, "h.", "1.") },
		"unsplit":    func(v *ladderVector) { v.Split = false },
		"3.x":        func(v *ladderVector) { v.Broker = "3.13" },
		"priority 4": func(v *ladderVector) { v.Priority = 4 },
	} {
		v := high
		p := *high.Publish
		v.Publish = &p
		change(&v)
		if len(ladderSpecRules(v)) == 0 {
			t.Errorf("%s: a broken split vector passes", name)
		}
	}
}

// reverseBits is key with its first n words in the other order.
func reverseBits(key string, n int) string {
	words := strings.SplitN(key, ".", n+1)
	slices.Reverse(words[:n])
	return strings.Join(words, ".")
}

// TestWireFormatShowsTheLadderVector: the worked examples of
// docs/wire-format.md are the basic vector and the split one of priority
// 5, whose first level's high queue is topology.Ladder's.
func TestWireFormatShowsTheLadderVector(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/wire-format.md")
	if err != nil {
		t.Fatal(err)
	}
	v := vectorOf(t, ladderCases()[0])
	split := vectorOf(t, splitCases()[2])
	l := topology.NewLadder(runtime.QueueQuorum, time.Second, topology.Version{Major: 4})
	for _, s := range []string{v.Publish.Exchange, v.Publish.RoutingKey, v.Binding.Exchange, split.Publish.Exchange, split.Publish.RoutingKey, l.HighLevel(6)} {
		if !bytes.Contains(doc, []byte("`"+s+"`")) {
			t.Errorf("docs/wire-format.md does not show `%s`, of the vectors %s and %s", s, v.Name, split.Name)
		}
	}
}
