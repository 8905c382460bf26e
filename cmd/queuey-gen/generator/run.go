package generator

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

const usage = `usage: queuey-gen [-check | -schema] [packages]

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

With -schema, queuey-gen writes nothing either: it prints, as JSON on
standard output, each job's queue name, kind, max_attempts, max_priority,
queue type and delay mode (delay: the annotation's, or "queue" with
delay_default true when the annotation leaves it to the workers' backend,
whose default it is unless configured otherwise), and a JSON Schema of
its payload: what a producer in another language needs to enqueue it in
queuey's wire format (docs/wire-format.md).

	go tool queuey-gen -schema ./... > jobs.schema.json
`

// Run is queuey-gen's main: it parses args (without the program name),
// loads, generates and writes, reporting on stderr; with -schema it prints
// the jobs' schemas on stdout instead of writing. It returns the exit
// status: 0 on success, 1 on a generation error, 2 on a usage error.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuey-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	check := fs.Bool("check", false, "write nothing; name each missing or stale queuey_gen.go and exit 1 if there is any")
	schema := fs.Bool("schema", false, "write nothing; print each job's queue and a JSON Schema of its payload as JSON on stdout")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *check && *schema {
		fmt.Fprintln(stderr, "queuey-gen: -check and -schema do not go together")
		return 2
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "queuey-gen: %v\n", err)
		return 1
	}

	rel := positions(wd, os.Getenv)
	if *schema {
		out, err := schemasOf(wd, fs.Args())
		if err == nil {
			_, err = stdout.Write(out)
		}
		if err != nil {
			fmt.Fprintln(stderr, rel(err.Error()))
			return 1
		}
		return 0
	}
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

// positions returns what rewrites the file paths in a diagnostic for the
// reader: relative to the working directory wd when a file is in it, as
// the go command reports them, and absolute otherwise. Under go generate
// (getenv gives GOFILE and GOPACKAGE) wd is the package's directory, not
// the one go generate ran in, which a generator is not told: a path
// relative to the package would not be found from there, so every path
// stays absolute, which an editor or terminal finds from anywhere.
func positions(wd string, getenv func(string) string) func(string) string {
	if getenv("GOFILE") != "" && getenv("GOPACKAGE") != "" {
		return func(s string) string { return s }
	}
	return func(s string) string { return strings.ReplaceAll(s, wd+string(filepath.Separator), "") }
}

// generate loads the packages of args and returns their generated files.
func generate(wd string, args []string) (map[string][]byte, error) {
	pkgs, err := load(wd, args)
	if err != nil {
		return nil, err
	}
	return Generate(pkgs)
}

// schemasOf loads the packages of args and returns their jobs' schemas.
func schemasOf(wd string, args []string) ([]byte, error) {
	pkgs, err := load(wd, args)
	if err != nil {
		return nil, err
	}
	return generateSchemas(pkgs)
}

// load loads the packages of args, patterns or directories.
func load(wd string, args []string) ([]*packages.Package, error) {
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
	return Load(LoadConfig{Dir: wd, Patterns: patterns})
}
