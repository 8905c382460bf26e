package dashboard

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/queuey/queuey/admin"
)

// payloadView is a dead letter's payload as the letter page shows it:
// indented JSON when it decoded, otherwise the raw body as text and hex,
// with why.
type payloadView struct {
	JSON string
	Text string
	Hex  string
	Note string
}

// maxShownBytes bounds the raw bytes a page shows.
const maxShownBytes = 64 << 10

// showPayload prepares l's payload, or a poison letter's body, for the page.
func showPayload(l admin.DeadLetterInfo) payloadView {
	if l.Poison {
		return rawBody(l.Body)
	}
	pv := payloadView{Note: l.PayloadError}
	if len(l.Payload) > 0 && string(l.Payload) != "null" {
		pv.JSON = jsonText(l.Payload, "  ")
	}
	return pv
}

// jsonText re-encodes raw, indented by indent (compact when empty), and
// spells <, > and & as themselves rather than
// \u escapes, so that the page shows what the job carries; the template
// escapes it for HTML. raw that is not JSON comes back as it is.
func jsonText(raw json.RawMessage, indent string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// rawBody shows b as text when it is UTF-8, and as a hex dump always.
func rawBody(b []byte) payloadView {
	var pv payloadView
	shown := b[:min(len(b), maxShownBytes)]
	if utf8.Valid(shown) {
		pv.Text = string(shown)
	}
	pv.Hex = hex.Dump(shown)
	if len(b) > len(shown) {
		pv.Note = fmt.Sprintf("showing the first %d of %d bytes", len(shown), len(b))
	}
	return pv
}

// summaryLen bounds the payload summary of a dead letter row, in runes.
const summaryLen = 80

// summary is a one-line view of a letter's payload for the list.
func summary(l admin.DeadLetterInfo) string {
	s := jsonText(l.Payload, "")
	switch {
	case l.Poison:
		s = fmt.Sprintf("(%d raw bytes)", len(l.Body))
	case l.PayloadError != "":
		s = "(" + l.PayloadError + ")"
	}
	if utf8.RuneCountInString(s) > summaryLen {
		s = string([]rune(s)[:summaryLen-1]) + "…"
	}
	return s
}
