// Package gen_test measures queuey-gen on a package of 200 annotated
// structs beside go vet of the same package, the cost a developer already
// pays on every change:
//
//	go test -run '^$' -bench . ./bench/gen/
//
// Each iteration edits one file first, so that the package itself is
// type-checked again while its dependencies come from the build cache, as
// after a real edit.
package gen_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// jobs is how many annotated structs the package holds.
const jobs = 200

// setup writes a module with package jobs of `jobs` annotated structs in
// a temporary directory, builds queuey-gen, and returns the package
// directory, the binary and the environment for the go command.
func setup(b *testing.B) (pkgDir, bin string, env []string) {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	mod := b.TempDir()
	env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		b.Fatal(err)
	}
	write(b, filepath.Join(mod, "go.sum"), sum)
	write(b, filepath.Join(mod, "go.mod"), []byte("module example.com/bench\n\ngo 1.26.0\n\n"+
		"require github.com/queuey/queuey v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/queuey/queuey => "+root+"\n"))
	pkgDir = filepath.Join(mod, "jobs")
	for file := range 10 {
		write(b, filepath.Join(pkgDir, fmt.Sprintf("jobs%d.go", file)), source(file, jobs/10))
	}
	// The //go:generate line runs go tool queuey-gen, as the README's
	// install section sets it up.
	run(b, mod, env, "go", "get", "-tool", "github.com/queuey/queuey/cmd/queuey-gen")
	bin = filepath.Join(mod, "queuey-gen")
	// Built in this module with its own settings: -mod=mod here would
	// rewrite its go.mod.
	run(b, root, os.Environ(), "go", "build", "-o", bin, "./cmd/queuey-gen")
	// Warm the build cache for the dependencies and write the first
	// output, so that every iteration sees the same package.
	run(b, pkgDir, env, bin)
	run(b, pkgDir, env, "go", "vet", ".")
	return pkgDir, bin, env
}

// source returns file number file of package jobs, holding n jobs.
func source(file, n int) []byte {
	var s strings.Builder
	s.WriteString("package jobs\n\nimport \"time\"\n\n")
	if file == 0 {
		s.WriteString("//go:generate go tool queuey-gen\n\n")
		s.WriteString("// Address is nested in every job.\ntype Address struct {\n\tStreet string\n\tZip    string\n}\n\n")
	}
	for i := range n {
		id := file*n + i
		fmt.Fprintf(&s, "// Job%03d is job number %d.\n//\n//queuey:queue prefetch=%d max_attempts=%d retry_base=%ds\n", id, id, 1+id%50, 1+id%10, 1+id%5)
		fmt.Fprintf(&s, "type Job%03d struct {\n\tID      string\n\tCount   int\n\tAt      time.Time\n\tTags    []string\n\tAddress *Address\n\tMeta    map[string]int64\n}\n\n", id)
	}
	return []byte(s.String())
}

func write(b *testing.B, path string, data []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

func run(b *testing.B, dir string, env []string, name string, args ...string) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, &out)
	}
}

// edit changes a comment of the package, so that it must be type-checked
// again.
func edit(b *testing.B, pkgDir string, i int) {
	b.Helper()
	write(b, filepath.Join(pkgDir, "edit.go"), fmt.Appendf(nil, "package jobs\n\n// edit %d\n", i))
}

// BenchmarkQueueyGen times the queuey-gen binary on the package.
func BenchmarkQueueyGen(b *testing.B) {
	pkgDir, bin, env := setup(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		edit(b, pkgDir, i)
		b.StartTimer()
		run(b, pkgDir, env, bin)
	}
}

// BenchmarkGoGenerate times go generate on the package: the //go:generate
// line's go run, with its build cached, plus queuey-gen.
func BenchmarkGoGenerate(b *testing.B) {
	pkgDir, _, env := setup(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		edit(b, pkgDir, i)
		b.StartTimer()
		run(b, pkgDir, env, "go", "generate", ".")
	}
}

// BenchmarkGoVet times go vet on the same package, for comparison.
func BenchmarkGoVet(b *testing.B) {
	pkgDir, _, env := setup(b)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		edit(b, pkgDir, i)
		b.StartTimer()
		run(b, pkgDir, env, "go", "vet", ".")
	}
}
