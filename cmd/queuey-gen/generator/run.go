package generator

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"
)

const usage = `usage: queuey-gen [-check | -accept | -schema] [packages]

queuey-gen writes queuey_gen.go beside the struct types of a Go package
that carry a //queuey:queue annotation: per job X, the resolved XQueue
config and typed EnqueueX and HandleX functions; per package, Queues().
Beside it, queuey_schema.json records the jobs' payloads as msgpack
carries them (each field's key and wire type) and the queue arguments
that jobs in flight depend on.

With no arguments it generates the package in the current directory, which
is what a line in that package runs, once go get -tool
github.com/queuey/queuey/cmd/queuey-gen has put the tool in go.mod:

	//go:generate go tool queuey-gen

Arguments are package patterns (./..., github.com/you/app/jobs) or
directories. A package that does not compile, a malformed annotation or a
field msgpack cannot carry is reported as file:line:col and nothing is
written; the exit status is then 1.

Each run compares the job structs with queuey_schema.json. A change that
jobs already in flight survive (a field added or removed, a number
widened, a Go field renamed with its msgpack key kept) is recorded and
noted on standard error. A change they would not survive (a field's type
changed or narrowed, a msgpack key renamed, a job's queue name, queue
type, max_priority or kind changed, a job removed) is reported at the
field or job, file:line:col, and nothing is written. docs/upgrades.md
says how to roll each out.

With -accept, such changes are recorded too: run it once the rollout is
planned.

	go tool queuey-gen -accept

With -check, queuey-gen writes nothing: it names each queuey_gen.go or
queuey_schema.json that is missing or differs from what it would write
(stale: an annotation or a job struct was edited without regenerating),
reports the changes jobs in flight would not survive, and exits 1 if
there is any. Run it in CI:

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
// status: 0 on success, 1 on a generation error, a change jobs in flight
// would not survive or (with -check) a file not fresh, 2 on a usage error.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuey-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	check := fs.Bool("check", false, "write nothing; name each missing or stale queuey_gen.go and queuey_schema.json, report changes jobs in flight would not survive, and exit 1 if there is any")
	accept := fs.Bool("accept", false, "record changes to jobs that jobs in flight would not survive, instead of refusing them")
	schema := fs.Bool("schema", false, "write nothing; print each job's queue and a JSON Schema of its payload as JSON on stdout")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	switch {
	case *check && *schema:
		fmt.Fprintln(stderr, "queuey-gen: -check and -schema do not go together")
		return 2
	case *accept && (*check || *schema):
		fmt.Fprintln(stderr, "queuey-gen: -accept writes, so it goes with neither -check nor -schema")
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
	files, notes, err := generate(wd, fs.Args(), *accept)
	for _, n := range notes {
		fmt.Fprintln(stderr, rel(n))
	}
	if err == nil && !*check {
		err = Write(files)
	}
	if err != nil {
		fmt.Fprintln(stderr, rel(err.Error()))
		if !*check {
			fmt.Fprintln(stderr, "queuey-gen: no file written")
		}
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

// generate loads the packages of args and returns their generated files
// and payload schema records, with the notes of Records.
func generate(wd string, args []string, accept bool) (map[string][]byte, []string, error) {
	pkgs, err := load(wd, args)
	if err != nil {
		return nil, nil, err
	}
	files, err := Generate(pkgs)
	if err != nil {
		return nil, nil, err
	}
	records, notes, err := Records(pkgs, os.ReadFile, accept)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(files, records)
	return files, notes, nil
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
