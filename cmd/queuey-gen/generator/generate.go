package generator

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/annotations"
)

// Generate returns the generated file of every package in pkgs that has
// annotated jobs, by path. A package without jobs whose directory holds a
// queuey_gen.go is given a nil content: that file is stale, and Write
// removes it. Generate reads nothing but pkgs and writes nothing; its
// output depends on its input alone.
//
// Errors are about the input: malformed annotations, fields msgpack cannot
// carry, generated names already taken, and a queue name used by two jobs
// of the packages given. Each line starts with file:line:col.
func Generate(pkgs []*packages.Package) (map[string][]byte, error) {
	pkgs = slices.Clone(pkgs)
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return cmp.Compare(a.PkgPath, b.PkgPath) })

	files := map[string][]byte{}
	var errs []error
	type owner struct {
		job annotations.Job
		pos token.Position
	}
	queues := map[string]owner{}
	for _, p := range pkgs {
		out := outputFile(p)
		if out == "" {
			continue
		}
		jobs, err := jobsOf(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, j := range jobs {
			pos := p.Fset.Position(j.NameOrigin())
			if first, ok := queues[j.Queue.Name]; ok {
				errs = append(errs, annotations.DuplicateQueue(j, pos, first.job, first.pos))
				continue
			}
			queues[j.Queue.Name] = owner{j, pos}
		}
		if len(jobs) == 0 {
			if slices.Contains(p.GoFiles, out) {
				files[out] = nil
			}
			continue
		}
		scope := p.Types.Scope()
		src, err := emit(p.PkgPath, p.Name, jobs, func(name string) bool { return scope.Lookup(name) != nil })
		if err != nil {
			errs = append(errs, fmt.Errorf("package %s: %w", p.PkgPath, err))
			continue
		}
		files[out] = src
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return files, nil
}

// jobsOf finds, resolves and checks the jobs of p.
func jobsOf(p *packages.Package) ([]annotations.Job, error) {
	var syntax []*ast.File
	for _, f := range p.Syntax {
		if filepath.Base(p.Fset.File(f.Pos()).Name()) != OutputName {
			syntax = append(syntax, f)
		}
	}
	jobs, err := annotations.ParseFiles(p.Fset, p.Name, syntax)
	if err != nil {
		return nil, err
	}
	var msgs []string
	if other := p.Types.Scope().Lookup(queuesFunc); len(jobs) > 0 && other != nil && filepath.Base(p.Fset.Position(other.Pos()).Filename) != OutputName {
		msgs = append(msgs, fmt.Sprintf("%s: %s is already declared; queuey-gen declares it to list the package's queues, so rename it",
			p.Fset.Position(other.Pos()), queuesFunc))
	}
	for _, j := range jobs {
		msgs = append(msgs, checkJob(p, j)...)
	}
	if len(msgs) > 0 {
		slices.SortStableFunc(msgs, comparePositioned)
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	return jobs, nil
}

// comparePositioned orders "file:line:col: msg" lines by file, then line
// and column as numbers.
func comparePositioned(a, b string) int {
	pa, pb := strings.SplitN(a, ":", 4), strings.SplitN(b, ":", 4)
	if len(pa) < 4 || len(pb) < 4 {
		return strings.Compare(a, b)
	}
	num := func(s string) int { n, _ := strconv.Atoi(s); return n }
	return cmp.Or(
		strings.Compare(pa[0], pb[0]),
		cmp.Compare(num(pa[1]), num(pb[1])),
		cmp.Compare(num(pa[2]), num(pb[2])),
	)
}

// checkJob reports the fields of j that msgpack cannot carry, the names
// Generate would declare for j that p already declares, and a limit_key=
// that names no field a limit key can be read from.
func checkJob(p *packages.Package, j annotations.Job) []string {
	obj, ok := p.Types.Scope().Lookup(j.Type).(*types.TypeName)
	if !ok {
		return []string{fmt.Sprintf("%s: type %s is not in the type-checked package", p.Fset.Position(j.Pos), j.Type)}
	}
	var msgs []string
	names := generatedNames(j.Type)
	for _, name := range []string{names.queue, names.job, names.enqueue, names.enqueueMany, names.handle} {
		other := p.Types.Scope().Lookup(name)
		if other == nil || filepath.Base(p.Fset.Position(other.Pos()).Filename) == OutputName {
			continue
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s is already declared at %s; queuey-gen declares it for job %s, so rename one of them",
			p.Fset.Position(j.Pos), name, p.Fset.Position(other.Pos()), j.Type))
	}

	st := obj.Type().Underlying().(*types.Struct)
	msgs = append(msgs, checkLimitKey(p, j, st)...)
	qual := types.RelativeTo(p.Types)
	for _, pr := range checkJobFields(obj.Type().(*types.Named), j.Type) {
		msgs = append(msgs, fmt.Sprintf("%s: field %s (%s) cannot be carried by msgpack: %s",
			p.Fset.Position(st.Field(pr.top).Pos()), pr.path, types.TypeString(pr.typ, qual), pr.why))
	}
	return msgs
}

// queuesFunc is the per-package function listing every queue.
const queuesFunc = "Queues"

type names struct{ queue, job, enqueue, enqueueMany, handle string }

// generatedNames returns what Generate declares for job type typ: exported
// for an exported type, unexported for an unexported one.
func generatedNames(typ string) names {
	r, _ := utf8.DecodeRuneInString(typ)
	if unicode.IsUpper(r) {
		return names{typ + "Queue", typ + "Job", "Enqueue" + typ, "EnqueueMany" + typ, "Handle" + typ}
	}
	title := string(unicode.ToUpper(r)) + typ[utf8.RuneLen(r):]
	return names{typ + "Queue", typ + "Job", "enqueue" + title, "enqueueMany" + title, "handle" + title}
}
