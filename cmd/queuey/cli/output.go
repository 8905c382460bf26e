package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// printJSON writes v as indented JSON, terminal-safe (see jsonSafe).
func (r *run) printJSON(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := r.env.Stdout.Write(jsonSafe(buf.Bytes()))
	return err
}

// safe returns s fit for a terminal: each rune that is not printable (C0
// controls, newline and tab included; DEL; C1 controls; bidi overrides and
// other format characters; unassigned runes) is written as Go writes it in
// a quoted string (\n, \x1b, \u202e), and so is each byte that is not
// UTF-8 (\xff). Everything else is left as it is. Job IDs, reasons, kinds,
// queue names, headers and every other text from the broker or its users
// go through it before a table or a message shows them, so that no such
// text can move the cursor, recolour or retitle the terminal, reorder a
// line or break one.
func safe(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 && r == utf8.RuneError || !strconv.IsPrint(r) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case size == 1 && r == utf8.RuneError:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// sprintf formats like fmt.Sprintf, passing every string, error and
// fmt.Stringer argument through safe: the format is the command's own
// text, the arguments are data.
func sprintf(format string, args ...any) string {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = safe(v)
		case error:
			args[i] = safe(v.Error())
		case fmt.Stringer:
			args[i] = safe(v.String())
		}
	}
	return fmt.Sprintf(format, args...)
}

// printf writes sprintf(format, args...) to w.
func printf(w io.Writer, format string, args ...any) {
	io.WriteString(w, sprintf(format, args...))
}

// jsonSafe returns JSON text js with each rune that is not printable
// written as a \u escape. encoding/json escapes C0 controls but writes DEL,
// C1 controls and bidi overrides as they are; outside strings JSON text is
// ASCII, so these occur only inside strings, where the escape stands for
// the same rune: the values decode as they were. A byte that is not UTF-8
// (which JSON text cannot hold) becomes \ufffd, as encoding/json makes it
// in the strings it encodes.
func jsonSafe(js []byte) []byte {
	var out []byte
	for i := 0; i < len(js); {
		r, size := utf8.DecodeRune(js[i:])
		invalid := size == 1 && r == utf8.RuneError
		if !invalid && (r < utf8.RuneSelf && r != 0x7f || strconv.IsPrint(r)) {
			if out != nil {
				out = append(out, js[i:i+size]...)
			}
			i += size
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(js)+16), js[:i]...)
		}
		if invalid {
			out = append(out, `\ufffd`...)
		} else if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	if out == nil {
		return js
	}
	return out
}

// table writes rows under headers (none when nil) in aligned columns, each
// cell passed through safe.
func table(w io.Writer, headers []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(cells []string) {
		for i, c := range cells {
			if i > 0 {
				io.WriteString(tw, "\t")
			}
			io.WriteString(tw, safe(c))
		}
		io.WriteString(tw, "\n")
	}
	if headers != nil {
		line(headers)
	}
	for _, row := range rows {
		line(row)
	}
	_ = tw.Flush()
}

// shellWord returns s as one word of a POSIX shell command line, for
// commands printed to be copied: as it is when it holds only characters
// no shell reads specially, else in single quotes, or, when it holds
// runes that are not printable, in bash's $'...' with those runes as
// \x escapes of their bytes.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("@%+=:,./_-", r)))
	}) < 0 {
		return s
	}
	if safe(s) == s {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case size == 1 && r == utf8.RuneError || !strconv.IsPrint(r):
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}

// confirmHelp is the rule of confirmations, as queuey --help states it.
const confirmHelp = `Every command that deletes or moves jobs (dead redrive, dead purge, queues purge, queues delete, ladder redrive, outbox dead retry, outbox dead purge) asks for confirmation on a terminal, and refuses without --yes when standard input is not one.`

// errCancelled is the answer no to a confirmation.
var errCancelled = errors.New("cancelled: nothing was changed")

// confirm asks question on the terminal unless yes is set. Without a
// terminal to ask on, it refuses: a script must say --yes.
func (r *run) confirm(yes bool, what, question string) error {
	if yes {
		return nil
	}
	if !r.env.StdinTerminal {
		return usagef("refusing to %s without confirmation: standard input is not a terminal; pass --yes", what)
	}
	printf(r.env.Stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(r.env.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return errCancelled
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errCancelled
}

// progress draws a one-line counter on a terminal's standard error, at
// most ten times a second, and nothing elsewhere.
type progress struct {
	w    io.Writer
	on   bool
	last time.Time
	drew bool
}

func (p *progress) draw(format string, args ...any) {
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.drew = true
	io.WriteString(p.w, "\r\033[K"+sprintf(format, args...))
}

func (p *progress) done() {
	if p.drew {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// clip shortens s to n runes on one line for a table cell.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// printable reports whether b reads as text.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range string(b) {
		if !unicode.IsPrint(c) && !unicode.IsSpace(c) {
			return false
		}
	}
	return true
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// timeOrDash is t in UTC as layout says, or "-" when it is zero (unknown).
func timeOrDash(t time.Time, layout string) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(layout)
}

// count formats n, or "?" when it is unknown (nil).
func count(n *int) string {
	if n == nil {
		return "?"
	}
	return fmt.Sprint(*n)
}

// plural is n and noun, with an s unless n is 1: "1 dead letter", "2
// dead letters".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
