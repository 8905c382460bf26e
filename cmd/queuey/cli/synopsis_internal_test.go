package cli

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestSynopsisMatchesGrammar: every command line of the synopsis in
// docs/operating.md names commands the command has, flags they take, and
// no more positional arguments than they take (a package is --pkg, not a
// positional).
func TestSynopsisMatchesGrammar(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(doc), "```text\n")
	block, _, _ = strings.Cut(block, "```")
	var g grammar
	parser, err := newParser(&g, Env{Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for line := range strings.Lines(block) {
		line, _, _ = strings.Cut(strings.TrimSpace(line), "#")
		words := strings.Fields(line)
		if len(words) == 0 || words[0] != "queuey" {
			continue
		}
		lines++
		if err := checkSynopsis(parser.Model.Node, words[1:]); err != "" {
			t.Errorf("docs/operating.md: %s: %s", line, err)
		}
	}
	if lines < 5 {
		t.Fatalf("found %d command lines in the synopsis of docs/operating.md", lines)
	}
}

// checkSynopsis walks words (one command line of a synopsis, without
// "queuey") down the grammar from node, and says what does not fit.
func checkSynopsis(node *kong.Node, words []string) string {
	positional, wantValue := 0, false
	var alternative bool
	for _, w := range words {
		if w == "|" {
			alternative = true
			continue
		}
		w = strings.Trim(w, "[]()")
		w = strings.TrimSuffix(w, "...")
		switch {
		case w == "" || w == "|":
			alternative = w == "|"
			continue
		case strings.HasPrefix(w, "--"):
			f := flagOf(node, strings.TrimPrefix(w, "--"))
			if f == nil {
				return "no flag " + w + " for " + node.Path()
			}
			wantValue = !f.IsBool() && !f.IsCounter()
		case wantValue:
			wantValue = false
		case strings.ToUpper(w) == w:
			if !alternative {
				positional++
			}
			if len(node.Positional) == 0 && node.DefaultCmd != nil {
				node = node.DefaultCmd
			}
			if positional > len(node.Positional) {
				return "a positional " + w + ", but " + node.Path() + " takes " + plural(len(node.Positional), "positional argument")
			}
		default:
			child := childOf(node, w)
			if child == nil {
				return "no command " + w + " under " + node.Path()
			}
			node = child
		}
		alternative = false
	}
	return ""
}

func flagOf(node *kong.Node, name string) *kong.Flag {
	for _, group := range node.AllFlags(true) {
		for _, f := range group {
			if f.Name == name {
				return f
			}
		}
	}
	return nil
}

func childOf(node *kong.Node, name string) *kong.Node {
	for _, c := range node.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}
