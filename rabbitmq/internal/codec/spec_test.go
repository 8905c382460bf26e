package codec

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

// TestVectorsFollowTheSpec checks every file under testdata/wire against
// the rules of docs/wire-format.md, read from the file alone and written
// here apart from the codec, so that a vector (and the codec that writes
// it) cannot contradict the spec unnoticed: the properties, the AMQP
// priority (the envelope's, but for a worker's deferral), the body's
// fields and their ranges, the payload as exactly one msgpack value, the
// headers a job and a publish may carry, and the hold queues' arguments.
func TestVectorsFollowTheSpec(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(wireDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors in %s: %v", wireDir, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var v vector
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			for _, broken := range specRules(&v) {
				t.Error(broken)
			}
		})
	}
	invalid, err := filepath.Glob(filepath.Join(wireDir, "invalid", "*.json"))
	if err != nil || len(invalid) == 0 {
		t.Fatalf("no invalid vectors: %v", err)
	}
	for _, path := range invalid {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v invalidVector
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(v.Reason, "invalid envelope: ") {
			t.Errorf("invalid/%s: reason %q, want it to start \"invalid envelope: \"", filepath.Base(path), v.Reason)
		}
	}
}

// TestSpecRulesCatchABrokenVector: each rule of specRules fails a vector
// that breaks it, so that a rule cannot pass everything.
func TestSpecRulesCatchABrokenVector(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(wireDir, "priority.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		breakIt func(v *vector)
		want    string
	}{
		{"AMQP priority other than the envelope's", func(v *vector) { v.Properties.Priority = 0 }, "AMQP priority 0, want the envelope's 5"},
		{"transient", func(v *vector) { v.Properties.DeliveryMode = 1 }, "delivery_mode 1, want 2"},
		{"message id not the job ID", func(v *vector) { v.Properties.MessageID = "other" }, "message_id"},
		{"expiration", func(v *vector) { v.Properties.Expiration = "1000" }, "expiration"},
		{"bytes after the payload", func(v *vector) { v.BodyHex += "c0"; v.PayloadHex += "c0" }, "bytes after"},
		{"nil payload", func(v *vector) { v.BodyHex = strings.TrimSuffix(v.BodyHex, v.PayloadHex) + "c0"; v.PayloadHex = "c0" }, "payload is nil"},
		{"reserved job header", func(v *vector) { v.Envelope.Headers = map[string]string{"queuey-tick": "x"} }, "reserved"},
		{"timestamp", func(v *vector) { n := int64(1); v.Properties.Timestamp = &n }, "timestamp"},
		{"routing key", func(v *vector) { v.Publish.RoutingKey = "other" }, "routing key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v vector
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			if broken := specRules(&v); len(broken) != 0 {
				t.Fatalf("priority.json itself breaks the rules: %v", broken)
			}
			tc.breakIt(&v)
			broken := specRules(&v)
			if !strings.Contains(fmt.Sprint(broken), tc.want) {
				t.Errorf("rules found %v, want one about %q", broken, tc.want)
			}
		})
	}
}

// specRules returns the rules of docs/wire-format.md that v breaks.
func specRules(v *vector) []string {
	var broken []string
	bad := func(format string, args ...any) { broken = append(broken, fmt.Sprintf(format, args...)) }
	p, e := v.Properties, v.Envelope
	shortUTF8 := func(field, s string, min int) {
		if len(s) < min || len(s) > MaxShortString || !utf8.ValidString(s) {
			bad("%s %q: want %d to 255 bytes of UTF-8", field, s, min)
		}
	}

	// Properties.
	if p.ContentType != "application/vnd.queuey.envelope+msgpack" {
		bad("content_type %q", p.ContentType)
	}
	if p.MessageID != e.ID {
		bad("message_id %q, want the job ID %q", p.MessageID, e.ID)
	}
	shortUTF8("message_id", p.MessageID, 1)
	if p.Type != e.Kind {
		bad("type %q, want the kind %q", p.Type, e.Kind)
	}
	shortUTF8("type", p.Type, 0)
	if p.DeliveryMode != 2 {
		bad("delivery_mode %d, want 2", p.DeliveryMode)
	}
	if p.Expiration != "" {
		bad("expiration %q: a producer must not set it", p.Expiration)
	}
	ns, err := strconv.ParseInt(e.EnqueuedAtNS, 10, 64)
	if err != nil {
		bad("enqueued_at_ns %q: %v", e.EnqueuedAtNS, err)
	}
	switch secs := math.Floor(float64(ns) / 1e9); {
	case ns == 0 && p.Timestamp != nil:
		bad("timestamp %d, want none for enqueued_at 0", *p.Timestamp)
	case ns != 0 && (p.Timestamp == nil || float64(*p.Timestamp) != secs):
		bad("timestamp %v, want %v (enqueued_at in whole seconds)", p.Timestamp, secs)
	}
	deferral := v.Delay == nil && v.HoldQueue != nil && strings.Contains(v.HoldQueue.Name, ".deferred.")
	switch {
	case deferral && p.Priority < e.Priority:
		bad("AMQP priority %d of a deferral, want the queue's max_priority, at least the envelope's %d", p.Priority, e.Priority)
	case !deferral && p.Priority != e.Priority:
		bad("AMQP priority %d, want the envelope's %d", p.Priority, e.Priority)
	}

	// The body: the envelope's fields, then exactly one msgpack value.
	body, err1 := hex.DecodeString(v.BodyHex)
	payload, err2 := hex.DecodeString(v.PayloadHex)
	if err1 != nil || err2 != nil {
		bad("body_hex or payload_hex is not hex")
		return broken
	}
	if !bytes.HasSuffix(body, payload) {
		bad("body does not end with the payload")
	}
	if !v.DecodeOnly && (len(body) == 0 || body[0] != 0x97) {
		bad("a producer's body starts with an array of exactly 7 fields (0x97)")
	}
	if e.Attempt < 1 || e.Attempt > math.MaxInt32 || e.MaxAttempts < 1 || e.MaxAttempts > math.MaxInt32 {
		bad("attempt %d of %d, want each 1..2^31-1", e.Attempt, e.MaxAttempts)
	}
	shortUTF8("queue", e.Queue, 1)
	if !utf8.ValidString(e.LastError) {
		bad("last_error is not UTF-8")
	}
	r := mpscan.NewReader(payload)
	switch {
	case len(payload) > 0 && payload[0] == 0xc0:
		bad("payload is nil, want a map of the job's fields")
	case r.Skip() != nil:
		bad("payload is not one msgpack value")
	case len(r.Rest()) > 0:
		bad("%d bytes after the payload's one msgpack value", len(r.Rest()))
	}

	// Headers, and where the message goes.
	dead := strings.HasSuffix(v.Publish.RoutingKey, ".dead")
	for name, value := range e.Headers {
		if strings.HasPrefix(name, "queuey-") {
			bad("job header %q is reserved", name)
		}
		if !utf8.ValidString(name) || !utf8.ValidString(value) {
			bad("job header %q is not UTF-8", name)
		}
	}
	for name := range v.Headers {
		switch {
		case dead && strings.HasPrefix(name, "x-queuey-"):
		case v.Delay != nil && v.Delay.Mode == "plugin" && name == "x-delay":
		default:
			bad("AMQP header %q on a job a producer or a worker publishes", name)
		}
	}
	switch {
	case v.Delay != nil && v.Delay.Mode == "plugin":
		if v.Publish.Exchange != e.Queue+".delay" || v.Publish.RoutingKey != e.Queue || v.Publish.Mandatory {
			bad("plugin publish %+v, want exchange %q, routing key %q, not mandatory", v.Publish, e.Queue+".delay", e.Queue)
		}
	case v.HoldQueue != nil:
		checkHold(v, bad)
	case dead:
		if v.Publish.RoutingKey != e.Queue+".dead" || v.Headers["x-queuey-dead-reason"] == nil {
			bad("dead letter to %q with headers %v, want %q and a reason", v.Publish.RoutingKey, v.Headers, e.Queue+".dead")
		}
	case v.Publish.Exchange != "" || v.Publish.RoutingKey != e.Queue || !v.Publish.Mandatory:
		bad("publish %+v, want the default exchange, the routing key %q (the envelope's queue), mandatory", v.Publish, e.Queue)
	}
	return broken
}

// checkHold checks a publish through a hold queue against the tables of
// docs/wire-format.md ("Hold queues").
func checkHold(v *vector, bad func(string, ...any)) {
	h, q := v.HoldQueue, v.Envelope.Queue
	if v.Publish.Exchange != "" || v.Publish.RoutingKey != h.Name || !v.Publish.Mandatory {
		bad("hold publish %+v, want the default exchange, routing key %q, mandatory", v.Publish, h.Name)
	}
	ttl, ok := h.Arguments["x-message-ttl"].(float64)
	if !ok || ttl < 1 || !strings.HasSuffix(h.Name, "."+strconv.FormatFloat(ttl, 'f', -1, 64)) {
		bad("hold queue %q with x-message-ttl %v", h.Name, h.Arguments["x-message-ttl"])
	}
	want := map[string]any{
		"x-queue-type":              "classic",
		"x-message-ttl":             ttl,
		"x-dead-letter-exchange":    "",
		"x-dead-letter-routing-key": q,
		"x-expires":                 ttl + max(ttl, 1000),
	}
	if h.Arguments["x-queue-type"] == "quorum" {
		want = map[string]any{
			"x-queue-type":              "quorum",
			"x-message-ttl":             ttl,
			"x-dead-letter-exchange":    "",
			"x-dead-letter-routing-key": q,
			"x-dead-letter-strategy":    "at-least-once",
			"x-overflow":                "reject-publish",
		}
	}
	if fmt.Sprint(want) != fmt.Sprint(h.Arguments) {
		bad("hold queue arguments %v, want %v", h.Arguments, want)
	}
	if v.Delay != nil && v.Delay.Mode == "queue" {
		g := float64(v.Delay.GranularityMS)
		if ttl < float64(v.Delay.DelayMS) || math.Mod(ttl, g) != 0 {
			bad("hold of %v ms for a delay of %d ms at granularity %v ms: want the delay rounded up to the granularity", ttl, v.Delay.DelayMS, g)
		}
	}
}
