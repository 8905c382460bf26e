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
// file is input, written into the case's package directory. A case with
// a want section of queuey_schema.json shows the output and the record
// written. A case with a queuey_schema.json among its input is compared
// with that record: its want sections are the record written and the
// notes on the changes found, if any, or the error.
const (
	wantOutput  = "want/" + generator.OutputName
	wantRecord  = "want/" + generator.RecordName
	wantNotes   = "want/notes"
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
	var want []txtar.File
	records, recorded := hasFile(ar, wantRecord), hasFile(ar, generator.RecordName)
	for _, f := range ar.Files {
		if strings.HasPrefix(f.Name, "want/") {
			want = append(want, f)
			continue
		}
		tempmod.WriteFile(t, filepath.Join(dir, f.Name), f.Data)
	}
	if len(want) == 0 && !*update {
		t.Fatalf("%s has no %s, %s or %s section", path, wantOutput, wantError, wantRemoved)
	}

	got := generate(t, dir, env, records || recorded)
	if recorded && len(got) > 0 && got[0].Name == wantOutput {
		// A case about a change to a recorded schema: its output is
		// what other cases show.
		got = got[1:]
	}
	if *update {
		ar.Files = append(slices.DeleteFunc(ar.Files, func(f txtar.File) bool { return strings.HasPrefix(f.Name, "want/") }), got...)
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if names(got) != names(want) {
		t.Fatalf("got sections %s:\n%s\nwant %s:\n%s", names(got), txtar.Format(&txtar.Archive{Files: got}), names(want), txtar.Format(&txtar.Archive{Files: want}))
	}
	for i, g := range got {
		if !bytes.Equal(g.Data, want[i].Data) {
			t.Errorf("%s differs from %s (run go test -update to accept):\n%s", g.Name, path, lineDiff(string(want[i].Data), string(g.Data)))
		}
	}
	if len(got) == 0 || got[0].Name != wantOutput {
		return
	}
	out := got[0].Data
	if formatted, err := format.Source(out); err != nil || !bytes.Equal(formatted, out) {
		t.Errorf("output is not gofmt-clean (err %v)", err)
	}
	if !bytes.HasPrefix(out, []byte(generator.Header+"\n")) {
		t.Errorf("output does not start with %q", generator.Header)
	}
	// Put the output in place for the build step, through Write.
	if err := generator.Write(map[string][]byte{filepath.Join(dir, generator.OutputName): out}); err != nil {
		t.Fatal(err)
	}
}

// names lists the names of files.
func names(files []txtar.File) string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return strings.Join(out, ", ")
}

// generate loads and generates the package in dir and returns the want
// sections of its result: the output or its removal, then, with records,
// the payload schema record and the notes on its changes, if any; or the
// error. Paths in errors and notes are made relative to dir, so that they
// do not depend on the temporary directory.
func generate(t *testing.T, dir string, env []string, records bool) []txtar.File {
	t.Helper()
	relative := func(s string) []byte {
		return []byte(strings.ReplaceAll(s, dir+string(filepath.Separator), "") + "\n")
	}
	failed := func(err error) []txtar.File {
		return []txtar.File{{Name: wantError, Data: relative(err.Error())}}
	}
	pkgs, err := generator.Load(generator.LoadConfig{Dir: dir, Env: env})
	if err != nil {
		return failed(err)
	}
	files, err := generator.Generate(pkgs)
	if err != nil {
		return failed(err)
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
	var sections []txtar.File
	content, ok := files[out]
	switch {
	case !ok:
		t.Fatalf("Generate returned no file for %s", out)
	case content == nil:
		sections = append(sections, txtar.File{Name: wantRemoved})
	default:
		sections = append(sections, txtar.File{Name: wantOutput, Data: content})
	}
	if !records {
		return sections
	}
	recs, notes, err := generator.Records(pkgs, os.ReadFile, false)
	if err != nil {
		return failed(err)
	}
	if rec, ok := recs[filepath.Join(dir, generator.RecordName)]; ok {
		if rec == nil {
			sections = append(sections, txtar.File{Name: wantRecord + ".removed"})
		} else {
			sections = append(sections, txtar.File{Name: wantRecord, Data: rec})
		}
	}
	if len(notes) > 0 {
		sections = append(sections, txtar.File{Name: wantNotes, Data: relative(strings.Join(notes, "\n"))})
	}
	return sections
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
