package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/annotations"
	"github.com/queuey/queuey/runtime"
)

// annotatedQueues loads the packages of patterns (syntax only: nothing is
// compiled), from dir (empty: the current directory), and returns the
// queues their //queuey:queue annotations declare. Patterns that declare
// no queue at all are an error (exit 1): a mistyped --pkg would otherwise
// show an empty list as if it were true. So is a pattern the go command
// cannot load, in words that say which, from where, and what to do.
func annotatedQueues(dir string, patterns []string) ([]runtime.QueueConfig, error) {
	where, err := filepath.Abs(cmpDir(dir))
	if err != nil {
		where = dir
	}
	asked := strings.Join(patterns, " ")
	if err := inModule(dir, where, asked); err != nil {
		return nil, err
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax, Dir: dir}, patterns...)
	if err != nil {
		return nil, fail(ExitFailure, "--pkg %s: cannot load the packages from %s: %v", asked, where, err)
	}
	var out []runtime.QueueConfig
	var errs []string
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, pkgError(p, e, where))
		}
		jobs, err := annotations.ParseFiles(p.Fset, p.Name, p.Syntax)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for _, j := range jobs {
			out = append(out, j.Queue)
		}
	}
	if len(errs) > 0 {
		return nil, fail(ExitFailure, "%s", strings.Join(errs, "\n"))
	}
	if len(out) == 0 {
		return nil, fail(ExitFailure, "--pkg %s: no //queuey:queue annotation there", asked)
	}
	return out, nil
}

// cmpDir is dir, or "." for the current directory.
func cmpDir(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// inModule refuses to load packages from dir (where, absolute) when it is
// in no Go module: the go command resolves --pkg patterns in the module
// of the directory it runs in, and says so in words about itself.
func inModule(dir, where, asked string) error {
	cmd := exec.Command("go", "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return fail(ExitFailure, "--pkg %s: the go command, which reads the packages, does not run in %s: %v", asked, where, err)
	}
	if mod := strings.TrimSpace(string(out)); mod == "" || mod == os.DevNull {
		return fail(ExitFailure, "--pkg %s: %s is in no Go module (no go.mod there or above), and --pkg patterns are resolved in the module of the directory queuey runs in: "+
			"run queuey from your module's directory (where go.mod is, or below it)", asked, where)
	}
	return nil
}

// pkgError puts an error of loading package p in an operator's words: the
// pattern or package, where it was looked for, and the go command's own
// reason. An error in a file of the package keeps its position.
func pkgError(p *packages.Package, e packages.Error, where string) string {
	msg := e.Msg
	if e.Pos != "" && e.Pos != "-" {
		return fmt.Sprintf("--pkg: package %s: %s: %s", p.PkgPath, e.Pos, msg)
	}
	// "pattern ./x/...: lstat ./x/: no such file or directory"
	msg = strings.TrimPrefix(msg, "pattern "+p.PkgPath+": ")
	// "no required module provides package x; to add it:\n\tgo get x":
	// queuey reads packages, it adds none.
	msg, _, _ = strings.Cut(msg, "; to add it:")
	return fmt.Sprintf("--pkg %s: no such package, looked for from %s: %s", p.PkgPath, where, msg)
}
