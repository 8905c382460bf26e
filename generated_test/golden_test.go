package generatedtest

import (
	"bytes"
	"flag"
	"go/format"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
	"github.com/queuey/queuey/internal/testenv/tempmod"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar from the generator's output")

// Sections of a golden archive that hold what is expected; every other
// file is input, written into the case's package directory.
const (
	wantOutput  = "want/" + generator.OutputName
	wantError   = "want/error"
	wantRemoved = "want/removed"
)

// TestGolden runs the generator on every testdata/*.txtar case and compares
// its output or error with the want section. Every expected output is then
// built and vetted in a temporary module.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no golden cases in testdata")
	}
	mod, env := tempmod.New(t, tempmod.Root(t), "example.com/golden")
	var (
		built   []string // packages whose output must build
		outputs = map[string]bool{}
	)
	t.Run("cases", func(t *testing.T) {
		for _, path := range paths {
			name := strings.TrimSuffix(filepath.Base(path), ".txtar")
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if hasFile(ar, wantOutput) {
				built = append(built, "./"+name)
				outputs[name] = true
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runCase(t, path, ar, filepath.Join(mod, name), env)
			})
		}
	})
	if t.Failed() || *update || len(built) == 0 {
		return
	}
	t.Run("build", func(t *testing.T) {
		tempmod.Go(t, mod, env, append([]string{"build"}, built...)...)
		tempmod.Go(t, mod, env, append([]string{"vet"}, built...)...)
	})
	var errorCases int
	for _, path := range paths {
		if !outputs[strings.TrimSuffix(filepath.Base(path), ".txtar")] {
			errorCases++
		}
	}
	if errorCases < 15 {
		t.Errorf("%d golden error cases, want at least 15", errorCases)
	}
}

func hasFile(ar *txtar.Archive, name string) bool {
	return slices.ContainsFunc(ar.Files, func(f txtar.File) bool { return f.Name == name })
}

func runCase(t *testing.T, path string, ar *txtar.Archive, dir string, env []string) {
	var want *txtar.File
	for i, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") {
			want = &ar.Files[i]
			continue
		}
		tempmod.WriteFile(t, filepath.Join(dir, f.Name), f.Data)
	}
	if want == nil && !*update {
		t.Fatalf("%s has no %s, %s or %s section", path, wantOutput, wantError, wantRemoved)
	}

	gotName, got := generate(t, dir, env)
	if *update {
		if want == nil {
			ar.Files = append(ar.Files, txtar.File{})
			want = &ar.Files[len(ar.Files)-1]
		}
		want.Name, want.Data = gotName, got
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if gotName != want.Name {
		t.Fatalf("got %s:\n%s\nwant %s:\n%s", gotName, got, want.Name, want.Data)
	}
	if !bytes.Equal(got, want.Data) {
		t.Errorf("%s differs from %s (run go test -update to accept):\n%s", want.Name, path, lineDiff(string(want.Data), string(got)))
	}
	if gotName != wantOutput {
		return
	}
	if formatted, err := format.Source(got); err != nil || !bytes.Equal(formatted, got) {
		t.Errorf("output is not gofmt-clean (err %v)", err)
	}
	if !bytes.HasPrefix(got, []byte(generator.Header+"\n")) {
		t.Errorf("output does not start with %q", generator.Header)
	}
	// Put the output in place for the build step, through Write.
	if err := generator.Write(map[string][]byte{filepath.Join(dir, generator.OutputName): got}); err != nil {
		t.Fatal(err)
	}
}

// generate loads and generates the package in dir and returns which want
// section its result belongs in, and the result. Paths in errors are made
// relative to dir, so that they do not depend on the temporary directory.
func generate(t *testing.T, dir string, env []string) (string, []byte) {
	t.Helper()
	relative := func(err error) []byte {
		return []byte(strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n")
	}
	pkgs, err := generator.Load(generator.LoadConfig{Dir: dir, Env: env})
	if err != nil {
		return wantError, relative(err)
	}
	files, err := generator.Generate(pkgs)
	if err != nil {
		return wantError, relative(err)
	}
	again, err := generator.Generate(pkgs)
	if err != nil {
		t.Fatalf("second Generate: %v", err)
	}
	out := filepath.Join(dir, generator.OutputName)
	for path, content := range files {
		if path != out {
			t.Errorf("Generate wrote %s, want only %s", path, out)
		}
		if !bytes.Equal(content, again[path]) {
			t.Errorf("two Generate runs differ for %s", path)
		}
	}
	content, ok := files[out]
	switch {
	case !ok:
		t.Fatalf("Generate returned no file for %s", out)
	case content == nil:
		return wantRemoved, nil
	}
	return wantOutput, content
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\nwant: " + wl + "\n got: " + gl
		}
	}
	return "(same lines)"
}
