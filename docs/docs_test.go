// Package docs_test compiles every Go block of README.md and docs/*.md, so
// that the docs show code that builds against this checkout. How a block
// compiles is described in docs/development.md ("Go blocks in the docs").
package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuey/queuey/internal/testenv/tempmod"
)

// TestGoBlocks builds, for each markdown file, a module example.com/app in
// a temporary directory whose files are the file's Go blocks, runs
// go generate, go build and go vet in it, and fails with the markdown
// file's line for a block that does not compile. Blocks that are test files
// run with go test. README.md's programs then run: the one on the in-memory
// backend always, the one on RabbitMQ when a broker answers.
func TestGoBlocks(t *testing.T) {
	root := tempmod.Root(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{filepath.Join(root, "README.md")}, docs...)
	for _, md := range files {
		rel, err := filepath.Rel(root, md)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			t.Parallel()
			dir, env, blocks := buildBlocks(t, root, md)
			if rel == "README.md" && dir != "" {
				t.Run("memory program", func(t *testing.T) { runMemoryProgram(t, dir, env, blocks) })
				t.Run("rabbitmq program", func(t *testing.T) { runRabbitMQProgram(t, dir, env, blocks) })
			}
		})
	}
}

// buildBlocks writes the Go blocks of the markdown file md into a new
// module and builds it. It returns the module's directory (empty when md
// has no Go block), the go command's environment for it, and md's blocks.
func buildBlocks(t *testing.T, root, md string) (string, []string, []block) {
	t.Helper()
	text, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(string(text))
	if err != nil {
		t.Fatalf("%s:%v", md, err)
	}
	var gofiles []goFile
	generate, tests := false, false
	for _, b := range blocks {
		if b.lang != "go" {
			continue
		}
		f, err := goFileOf(md, b)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, g := range gofiles {
			if g.path == f.path {
				t.Errorf("%s:%d: two blocks are the file %s", md, b.line-1, f.path)
			}
		}
		gofiles = append(gofiles, f)
		generate = generate || strings.Contains(b.body, "//go:generate")
		tests = tests || strings.HasSuffix(f.path, "_test.go")
	}
	if t.Failed() || len(gofiles) == 0 {
		return "", nil, blocks
	}
	dir, env := tempmod.New(t, root, "example.com/app")
	for _, f := range gofiles {
		tempmod.WriteFile(t, filepath.Join(dir, filepath.FromSlash(f.path)), []byte(f.src))
	}
	if generate {
		tempmod.Go(t, dir, env, "generate", "./...")
	}
	tempmod.Go(t, dir, env, "build", "./...")
	tempmod.Go(t, dir, env, "vet", "./...")
	if tests {
		tempmod.Go(t, dir, env, "test", "-count=1", "./...")
	}
	return dir, env, blocks
}
