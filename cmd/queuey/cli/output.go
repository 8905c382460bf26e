package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// printJSON writes v as indented JSON.
func (r *run) printJSON(v any) error {
	enc := json.NewEncoder(r.env.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under headers (none when nil) in aligned columns.
func table(w io.Writer, headers []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if headers != nil {
		fmt.Fprintln(tw, strings.Join(headers, "\t"))
	}
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

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
	fmt.Fprintf(r.env.Stderr, "%s [y/N] ", question)
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
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
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

// count formats n, or "?" when it is unknown (negative).
func count(n int) string {
	if n < 0 {
		return "?"
	}
	return fmt.Sprint(n)
}
