package generator

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

const usage = `usage: queuey-gen [packages]

queuey-gen writes queuey_gen.go beside the struct types of a Go package
that carry a //queuey:queue annotation: per job X, the resolved XQueue
config and typed EnqueueX and HandleX functions; per package, Queues().

With no arguments it generates the package in the current directory, which
is what a line in that package runs:

	//go:generate go tool queuey-gen

Arguments are package patterns (./..., github.com/you/app/jobs) or
directories. A package that does not compile, a malformed annotation or a
field msgpack cannot carry is reported as file:line:col and nothing is
written; the exit status is then 1.
`

// Run is queuey-gen's main: it parses args (without the program name),
// loads, generates and writes, reporting on stderr. It returns the exit
// status: 0 on success, 1 on a generation error, 2 on a usage error.
func Run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("queuey-gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
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

	if err := generate(wd, fs.Args()); err != nil {
		// Paths relative to the working directory, as the go command
		// reports them.
		fmt.Fprintln(stderr, strings.ReplaceAll(err.Error(), wd+string(filepath.Separator), ""))
		fmt.Fprintln(stderr, "queuey-gen: no file written")
		return 1
	}
	return 0
}

func generate(wd string, args []string) error {
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
		return err
	}
	files, err := Generate(pkgs)
	if err != nil {
		return err
	}
	return Write(files)
}
