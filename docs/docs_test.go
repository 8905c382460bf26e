// Package docs_test compiles every Go block of README.md and docs/*.md, so
// that the docs show code that builds against this checkout. How a block
// compiles is described in docs/development.md ("Go blocks in the docs").
package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestGoBlocks builds, for each markdown file, a module example.com/app in
// a temporary directory whose files are the file's Go blocks, runs
// go generate, go build and go vet in it, and fails with the markdown
// file's line for a block that does not compile. Blocks that are test files
// run with go test. README.md's programs then run: the one on the in-memory
// backend always, the one on RabbitMQ when a broker answers.
func TestGoBlocks(t *testing.T) {
	root := repoRoot(t)
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
	dir, env := tempModule(t, root)
	for _, f := range gofiles {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(f.path)), []byte(f.src))
	}
	if generate {
		goCmd(t, dir, env, "generate", "./...")
	}
	goCmd(t, dir, env, "build", "./...")
	goCmd(t, dir, env, "vet", "./...")
	if tests {
		goCmd(t, dir, env, "test", "-count=1", "./...")
	}
	return dir, env, blocks
}

// repoRoot returns the repository's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the repository root %s: %v", root, err)
	}
	return root
}

// tempModule creates the module example.com/app in a temporary directory,
// requiring this checkout through a replace directive and every module it
// requires at its version, with queuey-gen as a tool, and returns its
// directory and the go command's environment for it: module downloads
// off, so that it builds from the module cache alone.
func tempModule(t *testing.T, root string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", rootMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/app\n\ngo " + mf.Go.Version + "\n\n" +
		"require github.com/queuey/queuey v0.0.0-00010101000000-000000000000\n\n"
	for _, r := range mf.Require {
		gomod += "require " + r.Mod.Path + " " + r.Mod.Version + " // indirect\n"
	}
	gomod += "\nreplace github.com/queuey/queuey => " + root + "\n\n" +
		"tool github.com/queuey/queuey/cmd/queuey-gen\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return dir, env
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command with args in dir and fails t with its output,
// whose positions are the markdown file's, when it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, &out)
	}
}
