package cli_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
)

// Text that a job's author or its handler's errors choose: terminal
// escapes (a colour, a window title ended by BEL), a newline, a tab, a C1
// control (CSI), DEL and a right-to-left override.
const (
	evilID     = "job\x1b[31m\nred\t\u009b2J\x7f\u202eexe.txt"
	evilReason = "boom\x1b]0;pwned\x07\nsecond line\u202e"
)

// Their escaped forms, as people see them.
const (
	evilIDShown     = `job\x1b[31m\nred\t\u009b2J\x7f\u202eexe.txt`
	evilReasonShown = `boom\x1b]0;pwned\a second line\u202e` // a table cell folds whitespace
)

// raw reports the first control character (or bidi override) in s.
func raw(s string) (rune, bool) {
	for _, c := range s {
		if c < 0x20 && c != '\n' || c == 0x7f || c >= 0x80 && c <= 0x9f || c == '\u202e' {
			return c, true
		}
	}
	return 0, false
}

// field returns the value of the line of out that starts with key.
func field(out, key string) (string, bool) {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// TestUntrustedTextEscaped: IDs, reasons and headers with control
// characters are shown escaped in dead ls, dead show and the messages of
// purge, redrive and errors; every line of output is a line of ours.
func TestUntrustedTextEscaped(t *testing.T) {
	t.Parallel()
	headers := map[string]string{"x-\x1b[2J": "v\x1b[1A\n"}
	b, _ := memoryWithDeadIDs(t, evilReason, headers, evilID, "plain")

	r := runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q")
	if c, ok := raw(r.out); ok || r.code != cli.ExitOK {
		t.Fatalf("dead ls: exit %d, raw %U in:\n%s", r.code, c, r.out)
	}
	lines := strings.Split(r.out, "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[1], evilIDShown+"  ") || !strings.Contains(lines[1], evilReasonShown) || !strings.HasPrefix(lines[2], "plain ") {
		t.Errorf("dead ls: want a header, one line per letter with the ID and reason escaped, a blank line and a count:\n%s", r.out)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "show", "q", evilID)
	if c, ok := raw(r.out); ok || r.code != cli.ExitOK {
		t.Fatalf("dead show: exit %d, raw %U in:\n%s", r.code, c, r.out)
	}
	for _, want := range []struct{ key, value string }{
		{"id:", evilIDShown},
		{"reason:", `permanent: boom\x1b]0;pwned\a\nsecond line\u202e`},
		{`header x-\x1b[2J:`, `v\x1b[1A\n`},
	} {
		if got, ok := field(r.out, want.key); !ok || got != want.value {
			t.Errorf("dead show: %s %q, want %q in:\n%s", want.key, got, want.value, r.out)
		}
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "show", "q", evilID+"?")
	if c, ok := raw(r.err); ok || r.code != cli.ExitFailure || !strings.Contains(r.err, evilIDShown+"?") {
		t.Errorf("dead show of an unknown ID: exit %d, raw %U, stderr:\n%s", r.code, c, r.err)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "purge", "q", "--id", evilID+"?", "--yes")
	if c, ok := raw(r.out + r.err); ok || r.code != cli.ExitFailure ||
		r.out != "purged 0 dead letters of q\nnot found: "+evilIDShown+"?\n" || !strings.Contains(r.err, `"`+evilIDShown+`?"`) ||
		strings.Count(r.err, "\n") != 1 {
		t.Errorf("dead purge of an unknown ID: exit %d, raw %U, stdout %q, stderr %q", r.code, c, r.out, r.err)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "redrive", "q", "--id", evilID, "--yes")
	if c, ok := raw(r.out + r.err); ok || r.code != cli.ExitOK || r.out != "moved 1 dead letter of q back onto q: 1 with ID "+strconv.Quote(evilID)+"\n" {
		t.Errorf("dead redrive: exit %d, raw %U, stdout %q, stderr %q", r.code, c, r.out, r.err)
	}

	// Letters are stored as they came: --json gives them exactly, and
	// escapes DEL, C1 and bidi runes as well as what encoding/json does.
	b, _ = memoryWithDeadIDs(t, evilReason, headers, evilID)
	r = runCLI(t, ctxT(t), memEnv(b), "--json", "dead", "ls", "q")
	if c, ok := raw(r.out); ok || r.code != cli.ExitOK {
		t.Fatalf("dead ls --json: exit %d, raw %U in:\n%s", r.code, c, r.out)
	}
	var page struct{ Letters []admin.DeadLetterInfo }
	err := json.Unmarshal([]byte(r.out), &page)
	letters := page.Letters
	if err != nil || len(letters) != 1 ||
		letters[0].ID != evilID || letters[0].Reason != "permanent: "+evilReason || letters[0].Headers["x-\x1b[2J"] != "v\x1b[1A\n" {
		t.Errorf("dead ls --json decodes to %+v, %v; want the letter's text exactly", letters, err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "--json", "dead", "show", "q", evilID)
	var shown struct {
		ID      string
		Letters []admin.DeadLetterInfo
	}
	if c, ok := raw(r.out); ok || json.Unmarshal([]byte(r.out), &shown) != nil || shown.ID != evilID || len(shown.Letters) != 1 || shown.Letters[0].ID != evilID {
		t.Errorf("dead show --json: raw %U, %+v; want the letter's ID exactly", c, shown)
	}
}

// TestNextPageCommandQuoted: the next-page command that dead ls prints
// quotes a cursor with a space and a semicolon as one shell word, so that
// pasting it runs nothing else.
func TestNextPageCommandQuoted(t *testing.T) {
	t.Parallel()
	b, _ := memoryWithDeadIDs(t, "550", nil, "x; touch pwned", "it's\x1b", "z")
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q", "--limit", "1")
	if want := "next page: queuey dead ls q --limit 1 --after '1:x; touch pwned'\n"; !strings.HasSuffix(r.out, want) {
		t.Errorf("dead ls page 1 ends %q, want %q", r.out, want)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q", "--limit", "1", "--after", "1:x; touch pwned")
	if want := `next page: queuey dead ls q --limit 1 --after $'2:it\'s\x1b'` + "\n"; !strings.HasSuffix(r.out, want) {
		t.Errorf("dead ls page 2 ends %q, want %q", r.out, want)
	}
}
