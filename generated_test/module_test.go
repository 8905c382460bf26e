package generatedtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// repoRoot is the directory of module github.com/queuey/queuey.
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

// tempModule creates a module example.com/golden in a temporary directory
// that requires this repository through a replace directive, with
// queuey-gen as a tool (so //go:generate go tool queuey-gen runs), and returns
// its directory and the environment for the go command in it: module
// downloads off, so that it works from the module cache alone.
func tempModule(t *testing.T) (dir string, env []string) {
	t.Helper()
	root := repoRoot(t)
	dir = t.TempDir()
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", rootMod, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every module the tool's packages come from is required, as go get
	// -tool leaves them: go tool needs that.
	gomod := "module example.com/golden\n\ngo 1.26.0\n\n" +
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
	env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
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

// goCmd runs the go command with args in dir and fails t with its output
// when it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, &out)
	}
}
