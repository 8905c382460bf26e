package admin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/goleak"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCursor: a cursor parses back into its position and ID, an ID that
// holds colons included; anything else is a plain ID at position 0.
func TestCursor(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"a", "job:with:colons", "", "7"} {
		if pos, got := admin.ParseCursor(admin.Cursor(42, id)); pos != 42 || got != id {
			t.Errorf("ParseCursor(Cursor(42, %q)) = %d, %q", id, pos, got)
		}
	}
	for _, after := range []string{"plain-id", "0:x", "-3:x", "x:1", ""} {
		if pos, got := admin.ParseCursor(after); pos != 0 || got != after {
			t.Errorf("ParseCursor(%q) = %d, %q; want 0 and the string as an ID", after, pos, got)
		}
	}
}

// TestSelector: IDs win over everything else, All takes every letter,
// Reason and Kind filter together, and an empty selector takes none.
func TestSelector(t *testing.T) {
	t.Parallel()
	a := admin.DeadLetterInfo{ID: "a", Kind: "emails.Send", Reason: "smtp: 550 mailbox full"}
	b := admin.DeadLetterInfo{ID: "b", Kind: "billing.Charge", Reason: "card declined"}
	for _, tc := range []struct {
		name string
		sel  admin.DeadLetterSelector
		want []string
	}{
		{"empty", admin.DeadLetterSelector{}, nil},
		{"all", admin.DeadLetterSelector{All: true}, []string{"a", "b"}},
		{"ids win over all", admin.DeadLetterSelector{All: true, IDs: []string{"b"}}, []string{"b"}},
		{"ids win over reason", admin.DeadLetterSelector{IDs: []string{"b"}, Reason: "550"}, []string{"b"}},
		{"reason", admin.DeadLetterSelector{Reason: "550"}, []string{"a"}},
		{"kind", admin.DeadLetterSelector{Kind: "billing.Charge"}, []string{"b"}},
		{"reason and kind", admin.DeadLetterSelector{Reason: "550", Kind: "billing.Charge"}, nil},
	} {
		var got []string
		for _, l := range []admin.DeadLetterInfo{a, b} {
			if tc.sel.Selects(l) {
				got = append(got, l.ID)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: selects %v, want %v", tc.name, got, tc.want)
		}
		if tc.sel.Empty() != (tc.name == "empty") {
			t.Errorf("%s: Empty() = %v", tc.name, tc.sel.Empty())
		}
	}
	sel := admin.DeadLetterSelector{IDs: []string{"a", "gone", "b", "also-gone"}}
	if got := sel.NotFound(map[string]bool{"a": true, "b": true}); !slices.Equal(got, []string{"gone", "also-gone"}) {
		t.Errorf("NotFound = %v, want the IDs not seen, in order", got)
	}
}

// TestPoisonID: the ID of a poison letter is stable, short and tells
// bodies apart.
func TestPoisonID(t *testing.T) {
	t.Parallel()
	id := admin.PoisonID([]byte("not an envelope"))
	if id != admin.PoisonID([]byte("not an envelope")) || len(id) != len("raw-")+12 || id[:4] != "raw-" {
		t.Errorf("PoisonID = %q, want a stable raw- and 12 hex digits", id)
	}
	if id == admin.PoisonID([]byte("another")) {
		t.Errorf("two bodies have PoisonID %q", id)
	}
}

// TestPayloadJSON: a payload decodes to JSON with its field names, and one
// crafted to nest millions deep is refused without recursing.
func TestPayloadJSON(t *testing.T) {
	t.Parallel()
	payload, err := msgpack.Marshal(map[string]any{"To": "a@b.c", "N": 3, "Raw": []byte{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := admin.PayloadJSON(payload)
	if err != nil || string(got) != `{"N":3,"Raw":"AQI=","To":"a@b.c"}` {
		t.Errorf("PayloadJSON = %s, %v", got, err)
	}
	deep := append([]byte{0x81, 0xa1, 'A'}, bytes.Repeat([]byte{0x91}, 12<<20)...)
	if _, err := admin.PayloadJSON(deep); !errors.Is(err, mpscan.ErrMalformed) {
		t.Errorf("PayloadJSON of a payload nested 12M deep = %v, want ErrMalformed", err)
	}
}

func TestDeadLetteredAtJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{time.Time{}, `"dead_lettered_at":null`},
		{at, `"dead_lettered_at":"2026-03-04T04:06:07.123456789Z"`},
	} {
		b, err := json.Marshal(admin.DeadLetterInfo{ID: "a", Payload: json.RawMessage("null"), DeadLetteredAt: c.at})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) || strings.Count(string(b), "dead_lettered_at") != 1 {
			t.Errorf("json of a letter dead-lettered at %v = %s, want it to hold %s once", c.at, b, c.want)
		}
		var back admin.DeadLetterInfo
		if err := json.Unmarshal(b, &back); err != nil || !back.DeadLetteredAt.Equal(c.at) || back.ID != "a" {
			t.Errorf("json %s read back as %+v, %v; want dead-lettered at %v", b, back, err, c.at)
		}
	}
}
