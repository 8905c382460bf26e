package cli

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// dangerous lists every rune a terminal may act on rather than show: C0
// controls, DEL, C1 controls, and the bidi controls and other format
// characters that reorder or hide text.
func dangerous() []rune {
	var rs []rune
	for r := rune(0); r < 0x20; r++ {
		rs = append(rs, r)
	}
	rs = append(rs, 0x7f)
	for r := rune(0x80); r < 0xa0; r++ {
		rs = append(rs, r)
	}
	rs = append(rs, 0x061c, 0x200b, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff, 0xe0001)
	for r := rune(0x202a); r <= 0x202e; r++ {
		rs = append(rs, r)
	}
	for r := rune(0x2066); r <= 0x2069; r++ {
		rs = append(rs, r)
	}
	return rs
}

func TestSafe(t *testing.T) {
	t.Parallel()
	for _, r := range dangerous() {
		in := "a" + string(r) + "b"
		got := safe(in)
		if want := strconv.QuoteToASCII(in); got != want[1:len(want)-1] {
			t.Errorf("safe(%+q) = %q, want %q", in, got, want[1:len(want)-1])
		}
	}
	for in, want := range map[string]string{
		"plain-id_1.2":        "plain-id_1.2",
		"a,b c":               "a,b c",
		`back\slash "quoted"`: `back\slash "quoted"`,
		"héllo 日本 🙂":          "héllo 日本 🙂",
		"\xff\xfe ok":         `\xff\xfe ok`,
		"\xe2\x80":            `\xe2\x80`,
		"\x1b[31mred\x1b[0m":  `\x1b[31mred\x1b[0m`,
	} {
		if got := safe(in); got != want {
			t.Errorf("safe(%q) = %q, want %q", in, got, want)
		}
		if safe(safe(in)) != safe(in) {
			t.Errorf("safe(safe(%q)) = %q, want it unchanged", in, safe(safe(in)))
		}
	}
}

func TestJSONSafe(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	for _, r := range dangerous() {
		sb.WriteRune(r)
	}
	sb.WriteString(`héllo "日本" \ 🙂`)
	in := map[string]string{"k" + sb.String(): sb.String()}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := jsonSafe(js)
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || !strconv.IsPrint(r) && r >= 0x80 {
			t.Fatalf("jsonSafe left %U in %s", r, out)
		}
		i += size
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil || len(back) != 1 || back["k"+sb.String()] != sb.String() {
		t.Errorf("jsonSafe(%s) = %s, which decodes to %q, %v; want the same value", js, out, back, err)
	}
	if plain := []byte(`{"a": "héllo"}`); !bytes.Equal(jsonSafe(plain), plain) {
		t.Errorf("jsonSafe changed %s", plain)
	}
	if got := jsonSafe([]byte("\"a\xffb\"")); string(got) != `"a\ufffdb"` {
		t.Errorf("jsonSafe of a byte that is not UTF-8 = %s, want \\ufffd in its place", got)
	}
}

func TestTableEscapesCells(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	table(&buf, []string{"QUEUE", "KIND"}, [][]string{{"q\x1b]0;t\x07", "a\tb\nc"}, {"r", "k"}})
	want := "QUEUE        KIND\n" +
		`q\x1b]0;t\a  a\tb\nc` + "\n" +
		"r            k\n"
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestShellWord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"3:abc-1.2_x@y":   "3:abc-1.2_x@y",
		"3:a b; rm -rf ~": "'3:a b; rm -rf ~'",
		"it's":            `'it'\''s'`,
		"$(id)`id`":       "'$(id)`id`'",
		"":                "''",
		"a\x1b[31m'\\\n":  `$'a\x1b[31m\'\\\x0a'`,
		"\u202eexe":       `$'\xe2\x80\xaeexe'`,
		"日本":              "'日本'",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestFailQuotesOnlyQDirectives: fail quotes the strings its %q
// directives format, after flags and past %%, and leaves the rest as
// sprintf writes them.
func TestFailQuotesOnlyQDirectives(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		format string
		args   []any
		want   string
	}{
		{"queue %q is gone", []any{"a\x1bb"}, `queue "a\x1bb" is gone`},
		{"100%% of %s, then %q", []any{"x\x1b", "y"}, `100% of x\x1b, then "y"`},
		{"%5.1f%% and %-8q.", []any{2.5, "z"}, `  2.5% and "z"     .`},
		{"rune %q, string %q", []any{'r', "s"}, `rune 'r', string "s"`},
		{"more %q than args %q", []any{"one"}, `more "one" than args %!q(MISSING)`},
	} {
		if got := fail(ExitFailure, c.format, c.args...).Error(); got != c.want {
			t.Errorf("fail(%q) = %q, want %q", c.format, got, c.want)
		}
	}
}

func TestVerbsAt(t *testing.T) {
	t.Parallel()
	format := "%d %% %+5.2f %q%"
	var verbs []byte
	for _, at := range verbsAt(format) {
		verbs = append(verbs, format[at])
	}
	if string(verbs) != "dfq" {
		t.Errorf("verbs of %q = %q, want %q", format, verbs, "dfq")
	}
}
