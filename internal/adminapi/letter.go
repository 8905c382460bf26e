package adminapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

// DeadLetterInfo is a dead letter as operators see it: the envelope's
// fields, why the job is dead, and its payload decoded.
type DeadLetterInfo struct {
	// ID is the job's ID. A poison letter has the message ID it came with,
	// or else its PoisonID, so that it can be shown and purged by ID like
	// any other.
	ID string `json:"id"`
	// Queue is the logical queue.
	Queue       string            `json:"queue"`
	Kind        string            `json:"kind"`
	Attempt     int               `json:"attempt"`
	MaxAttempts int               `json:"max_attempts"`
	Priority    uint8             `json:"priority"`
	EnqueuedAt  time.Time         `json:"enqueued_at"`
	Headers     map[string]string `json:"headers,omitempty"`
	// Reason says why the job is dead.
	Reason string `json:"reason"`
	// LastError is the error of the job's last run.
	LastError string `json:"last_error"`
	// DeadLetteredAt is when the letter was moved to the dead letters, in
	// UTC: by a worker (a permanent failure, attempts run out, a poison
	// message moved aside) or by the broker. A letter that is re-driven and
	// dies again has the time of its last death. Zero when it is not
	// recorded, as for a letter the broker moved without saying when.
	DeadLetteredAt time.Time `json:"dead_lettered_at"`
	// Payload is the msgpack payload decoded as JSON: field names and
	// values. It is null when the payload does not decode; PayloadError
	// then says why.
	Payload      json.RawMessage `json:"payload"`
	PayloadError string          `json:"payload_error,omitempty"`
	// Poison is set when the message was not a valid envelope at all; Body
	// then holds its raw bytes and Reason why it is poison.
	Poison bool   `json:"poison"`
	Body   []byte `json:"body,omitempty"`
}

// DeadLetterPage asks for one page of dead letters, oldest first.
type DeadLetterPage struct {
	// After is the previous page's DeadLetterList.Next, or the ID of the
	// letter to start after. Empty starts with the oldest. A cursor
	// carries the letter's position as well as its ID, which lets the
	// RabbitMQ backend read no further than it needs.
	After string
	// Limit is the most letters returned. Zero means DefaultDeadLetterLimit;
	// it is capped at MaxDeadLetterLimit.
	Limit int
}

// Page sizes of DeadLetters.
const (
	DefaultDeadLetterLimit = 50
	MaxDeadLetterLimit     = 100_000
)

// DeadLetterList is one page of dead letters.
type DeadLetterList struct {
	// Letters are the page's letters, oldest first.
	Letters []DeadLetterInfo `json:"letters"`
	// Next is the After of the next page (a cursor: see Cursor), empty on
	// the last page.
	Next string `json:"next,omitempty"`
	// Total counts the queue's dead letters when the page was read.
	Total int `json:"total"`
}

// IDs returns the IDs of the page's letters, in order.
func (l DeadLetterList) IDs() []string {
	ids := make([]string, 0, len(l.Letters))
	for _, d := range l.Letters {
		ids = append(ids, d.ID)
	}
	return ids
}

// Cursor is the cursor of the letter with ID id at 1-based position pos
// among its queue's dead letters: "pos:id".
func Cursor(pos int, id string) string { return strconv.Itoa(pos) + ":" + id }

// ParseCursor splits a DeadLetterPage.After into the position and ID of a
// cursor; a plain ID comes back with position 0 (unknown).
func ParseCursor(after string) (pos int, id string) {
	p, rest, ok := strings.Cut(after, ":")
	if !ok {
		return 0, after
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 {
		return 0, after
	}
	return n, rest
}

// PoisonID is the ID a poison letter without a message ID is known by:
// "raw-" and the first 12 hex digits of its body's SHA-256.
func PoisonID(body []byte) string {
	sum := sha256.Sum256(body)
	return "raw-" + hex.EncodeToString(sum[:6])
}

// PayloadJSON decodes a msgpack payload, which carries its field names, and
// returns it as JSON. Binary strings become base64 strings, times RFC 3339
// strings, and map keys that are not strings their fmt form. The payload
// may come from anywhere: a malformed one is refused before anything is
// allocated for it.
func PayloadJSON(payload []byte) (json.RawMessage, error) {
	var v any
	if err := mpscan.Unmarshal(payload, &v); err != nil {
		return nil, fmt.Errorf("payload is not msgpack: %w", err)
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, fmt.Errorf("payload as JSON: %w", err)
	}
	return b, nil
}

// jsonable turns what msgpack decodes into something encoding/json takes.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// MarshalJSON writes d as its json tags say, with dead_lettered_at in UTC,
// or null when the time is not recorded: a zero time would read as a real
// one. A null reads back as the zero time.
func (d DeadLetterInfo) MarshalJSON() ([]byte, error) {
	type fields DeadLetterInfo // the same fields, without this method
	out := struct {
		fields
		DeadLetteredAt *time.Time `json:"dead_lettered_at"`
	}{fields: fields(d)}
	if !d.DeadLetteredAt.IsZero() {
		t := d.DeadLetteredAt.UTC()
		out.DeadLetteredAt = &t
	}
	return json.Marshal(out)
}
