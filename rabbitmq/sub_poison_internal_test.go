package rabbitmq

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
)

// TestPoisonCopyDropsTheLargestHeaders: the dead-letter copy of an invalid
// message whose headers fill its frame drops the largest of them, only as
// many as it must, and its reason names them; a message that fits keeps
// every header.
func TestPoisonCopyDropsTheLargestHeaders(t *testing.T) {
	lim := codec.Limits{FrameMax: 131072, Reserve: addedHeadersRoom}
	m := &amqp.Delivery{
		MessageId: "p1",
		Headers: amqp.Table{
			"a":     strings.Repeat("a", 90000),
			"b":     strings.Repeat("b", 41000),
			"small": "kept",
		},
		Body: []byte("not an envelope"),
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	msg, dropped := poisonCopy(m, "q", "not a valid envelope", at, lim)
	if !lim.FitsHeader(&msg) {
		t.Fatalf("copy's content header is %d bytes, want at most %d", codec.HeaderSize(&msg), lim.HeaderRoom())
	}
	if !slices.Equal(dropped, []string{"a"}) {
		t.Errorf("dropped %q, want only the largest, \"a\"", dropped)
	}
	if msg.Headers["b"] != m.Headers["b"] || msg.Headers["small"] != "kept" || msg.Headers[codec.HeaderQueue] != "q" {
		t.Errorf("headers kept: %v", slices.Sorted(maps.Keys(msg.Headers)))
	}
	reason := codec.DeadReason(msg.Headers)
	for _, want := range []string{"not a valid envelope", `"a" (90007 bytes)`, "frame_max 131072", "1 of its headers dropped"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
	if got := codec.DeadAt(msg.Headers, "q"); !got.Equal(at) {
		t.Errorf("dead-lettered at %v, want %v", got, at)
	}
	if _, ok := m.Headers["a"]; !ok {
		t.Error("the delivery's own headers were changed")
	}

	// Many small headers: as many dropped as needed, the reason naming
	// the first few and counting the rest.
	many := amqp.Table{}
	for i := range 20000 {
		many[fmt.Sprintf("h%05d", i)] = "v"
	}
	msg, dropped = poisonCopy(&amqp.Delivery{Headers: many}, "q", "bad", at, lim)
	if !lim.FitsHeader(&msg) || len(dropped) == 0 || len(msg.Headers) < 1000 {
		t.Fatalf("20000 small headers: content header %d bytes, %d dropped, %d kept", codec.HeaderSize(&msg), len(dropped), len(msg.Headers))
	}
	if r := codec.DeadReason(msg.Headers); !strings.Contains(r, fmt.Sprintf("and %d more", len(dropped)-maxDroppedNamed)) {
		t.Errorf("reason %q does not count the unnamed ones", r)
	}

	// What fits is copied whole.
	msg, dropped = poisonCopy(&amqp.Delivery{Headers: amqp.Table{"x": strings.Repeat("x", 1000)}}, "q", "bad", at, lim)
	if len(dropped) != 0 || msg.Headers["x"] == nil || codec.DeadReason(msg.Headers) != "bad" {
		t.Errorf("a small message: dropped %q, reason %q", dropped, codec.DeadReason(msg.Headers))
	}
}
