// Package tempmod makes throwaway Go modules that require this checkout,
// for tests that build code as an application would: the generator's
// golden and install tests, and the test that compiles the docs' Go
// blocks.
package tempmod

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// Root returns the directory of module github.com/queuey/queuey: the
// nearest directory above the working directory with a go.mod of that
// module.
func Root(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modfile.ModulePath(data) == "github.com/queuey/queuey" {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod of github.com/queuey/queuey above the working directory")
		}
		dir = parent
	}
}

// New creates module path in a temporary directory, requiring the
// checkout at root through a replace directive and every module it
// requires at its version (as go get -tool leaves them: go tool needs
// that), with queuey-gen as a tool, so that //go:generate go tool
// queuey-gen runs. It returns the module's directory and the go command's
// environment for it: module downloads and toolchain switches off, so
// that it builds from the module cache alone.
func New(tb testing.TB, root, path string) (dir string, env []string) {
	tb.Helper()
	dir = tb.TempDir()
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		tb.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", rootMod, nil)
	if err != nil {
		tb.Fatal(err)
	}
	gomod := "module " + path + "\n\ngo " + mf.Go.Version + "\n\n" +
		"require github.com/queuey/queuey v0.0.0-00010101000000-000000000000\n\n"
	for _, r := range mf.Require {
		gomod += "require " + r.Mod.Path + " " + r.Mod.Version + " // indirect\n"
	}
	gomod += "\nreplace github.com/queuey/queuey => " + root + "\n\n" +
		"tool github.com/queuey/queuey/cmd/queuey-gen\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		tb.Fatal(err)
	}
	WriteFile(tb, filepath.Join(dir, "go.mod"), []byte(gomod))
	WriteFile(tb, filepath.Join(dir, "go.sum"), sum)
	env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	return dir, env
}

// WriteFile writes data to path, making its directory first.
func WriteFile(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Go runs the go command with args in dir and env, and fails tb with its
// output when it fails.
func Go(tb testing.TB, dir string, env []string, args ...string) {
	tb.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		tb.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, &out)
	}
}
