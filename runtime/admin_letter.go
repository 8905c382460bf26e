package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DeadLetterInfo is a dead letter as operators see it: the envelope's
// fields, why the job is dead, and its payload decoded.
type DeadLetterInfo struct {
	// ID is the job's ID. A poison letter has the message ID it came with,
	// or else "raw-" and the first 12 hex digits of its body's SHA-256,
	// so that it can be shown and purged by ID like any other.
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

// NewDeadLetterInfo describes dead letter d of queue. msgID is the message
// ID a poison letter came with, if any; it is ignored for a valid envelope.
func NewDeadLetterInfo(queue string, d DeadLetter, msgID string) DeadLetterInfo {
	if d.Envelope == nil {
		id := msgID
		if id == "" {
			id = PoisonID(d.Body)
		}
		return DeadLetterInfo{ID: id, Queue: queue, Reason: d.Reason, Poison: true, Body: d.Body, Payload: json.RawMessage("null")}
	}
	e := d.Envelope
	info := DeadLetterInfo{
		ID: e.ID, Queue: queue, Kind: e.Kind, Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
		Priority: e.Priority, EnqueuedAt: e.EnqueuedAt, Headers: e.Headers,
		Reason: d.Reason, LastError: e.LastError,
	}
	p, err := PayloadJSON(e.Payload)
	if err != nil {
		info.Payload = json.RawMessage("null")
		info.PayloadError = err.Error()
	} else {
		info.Payload = p
	}
	return info
}

// PoisonID is the ID a poison letter without a message ID is known by:
// "raw-" and the first 12 hex digits of its body's SHA-256.
func PoisonID(body []byte) string {
	sum := sha256.Sum256(body)
	return "raw-" + hex.EncodeToString(sum[:6])
}

// PayloadJSON decodes a msgpack payload, which carries its field names, and
// returns it as JSON. Binary strings become base64 strings, times RFC 3339
// strings, and map keys that are not strings their fmt form.
func PayloadJSON(payload []byte) (json.RawMessage, error) {
	var v any
	if err := unmarshalUntrusted(payload, &v); err != nil {
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

// Selects reports whether s takes the dead letter info describes.
func (s DeadLetterSelector) Selects(info DeadLetterInfo) bool {
	if len(s.IDs) > 0 {
		return slices.Contains(s.IDs, info.ID)
	}
	if s.All {
		return true
	}
	if s.Empty() {
		return false
	}
	return (s.Reason == "" || strings.Contains(info.Reason, s.Reason)) && (s.Kind == "" || info.Kind == s.Kind)
}

// NotFound returns the IDs s asks for that are not in seen.
func (s DeadLetterSelector) NotFound(seen map[string]bool) []string {
	var out []string
	for _, id := range s.IDs {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// RedriveEnvelope is for backend implementers: it returns the envelope
// that re-drives dead job e onto queue at now, attempt 1, the re-drive
// counted and timed in its headers, everything else as it was, so that
// every backend re-drives alike.
func RedriveEnvelope(e *Envelope, queue string, now time.Time) *Envelope {
	n := e.Clone()
	n.Queue = queue
	n.Attempt = 1
	n.Headers = maps.Clone(e.Headers)
	if n.Headers == nil {
		n.Headers = map[string]string{}
	}
	count, _ := strconv.Atoi(n.Headers[HeaderRedrives])
	n.Headers[HeaderRedrives] = strconv.Itoa(count + 1)
	n.Headers[HeaderRedrivenAt] = now.UTC().Format(time.RFC3339Nano)
	return n
}

// DeadLetterCursor is the cursor of the letter with ID id at 1-based
// position pos among its queue's dead letters: "pos:id".
func DeadLetterCursor(pos int, id string) string { return strconv.Itoa(pos) + ":" + id }

// ParseDeadLetterCursor splits a DeadLetterPage.After into the position and
// ID of a cursor; a plain ID comes back with position 0 (unknown).
func ParseDeadLetterCursor(after string) (pos int, id string) {
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

// PoisonRefusal is why a re-drive keeps a poison letter.
const PoisonRefusal = "poison: the message is not a valid envelope, so there is no job to put back; inspect it with dead show and remove it with dead purge --id"
