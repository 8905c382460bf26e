package generator

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const usage = `usage: queuey-gen [-check] [packages]

queuey-gen writes queuey_gen.go beside the struct types of a Go package
that carry a //queuey:queue annotation: per job X, the resolved XQueue
config and typed EnqueueX and HandleX functions; per package, Queues().

With no arguments it generates the package in the current directory, which
is what a line in that package runs, once go get -tool
github.com/queuey/queuey/cmd/queuey-gen has put the tool in go.mod:

	//go:generate go tool queuey-gen

Arguments are package patterns (./..., github.com/you/app/jobs) or
directories. A package that does not compile, a malformed annotation or a
field msgpack cannot carry is reported as file:line:col and nothing is
written; the exit status is then 1.

With -check, queuey-gen writes nothing: it names each queuey_gen.go that
is missing or differs from what it would write (stale: an annotation was
edited without regenerating), and exits 1 if there is any. Run it in CI:

	go tool queuey-gen -check ./...
`

// Run is queuey-gen's main: it parses args (without the program name),
// loads, generates and writes, reporting on stderr. It returns the exit
// status: 0 on success, 1 on a generation error, 2 on a usage error.
func Run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuey-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	check := fs.Bool("check", false, "write nothing; name each missing or stale queuey_gen.go and exit 1 if there is any")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "queuey-gen: %v\n", err)
		return 1
	}

	// Paths relative to the working directory, as the go command
	// reports them.
	rel := func(s string) string { return strings.ReplaceAll(s, wd+string(filepath.Separator), "") }
	files, err := generate(wd, fs.Args())
	if err == nil && !*check {
		err = Write(files)
	}
	if err != nil {
		fmt.Fprintln(stderr, rel(err.Error()))
		fmt.Fprintln(stderr, "queuey-gen: no file written")
		return 1
	}
	if !*check {
		return 0
	}
	stale, err := Stale(files)
	if err != nil {
		fmt.Fprintln(stderr, rel(err.Error()))
		return 1
	}
	for _, line := range stale {
		fmt.Fprintln(stderr, rel(line))
	}
	if len(stale) > 0 {
		fmt.Fprintf(stderr, "queuey-gen: %d generated file(s) not fresh: run go generate and commit the result\n", len(stale))
		return 1
	}
	return 0
}

// generate loads the packages of args and returns their generated files.
func generate(wd string, args []string) (map[string][]byte, error) {
	patterns := make([]string, len(args))
	for i, a := range args {
		patterns[i] = a
		// A bare directory name would be taken for an import path.
		if !filepath.IsAbs(a) && !strings.HasPrefix(a, ".") {
			if st, err := os.Stat(filepath.Join(wd, a)); err == nil && st.IsDir() {
				patterns[i] = "./" + filepath.ToSlash(a)
			}
		}
	}
	pkgs, err := Load(LoadConfig{Dir: wd, Patterns: patterns})
	if err != nil {
		return nil, err
	}
	return Generate(pkgs)
}
