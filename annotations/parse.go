package annotations

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"github.com/queuey/queuey/runtime"
)

// Directive starts the line of a doc comment that makes a struct a job.
const Directive = "//queuey:queue"

// directivePrefix starts every line this package looks at.
const directivePrefix = "//queuey:"

// Job is a struct type annotated with //queuey:queue.
type Job struct {
	// Type is the Go type name. Queue.Kind is the package name, a dot and
	// Type, as %T prints it.
	Type string
	// Pos is the position of the type's name.
	Pos token.Pos
	// NamePos is the position of the value of the name= key, or
	// token.NoPos when the queue name is the default.
	NamePos token.Pos
	// LimitKeyPos is the position of the value of the limit_key= key, or
	// token.NoPos when there is none: the generator checks that the field
	// it names is one a limit key can be read from.
	LimitKeyPos token.Pos
	// Spec is the type's declaration.
	Spec *ast.TypeSpec
	// Queue is the resolved configuration: every key given, every default
	// applied.
	Queue runtime.QueueConfig
}

// NameOrigin returns where j's queue name comes from: the value of its
// name= key, or the type's name when the name is the default.
func (j Job) NameOrigin() token.Pos {
	if j.NamePos.IsValid() {
		return j.NamePos
	}
	return j.Pos
}

// DuplicateQueue is the error of job j, whose queue name is already that of
// job first. pos and firstPos are the positions of their NameOrigin: the
// error is at j's name= value when it has one, else at its type's name.
func DuplicateQueue(j Job, pos token.Position, first Job, firstPos token.Position) *Error {
	what := fmt.Sprintf("default queue name %q of %s", j.Queue.Name, j.Type)
	if j.NamePos.IsValid() {
		what = fmt.Sprintf("%s=%s of %s", KeyName, j.Queue.Name, j.Type)
	}
	return &Error{Pos: pos, Key: KeyName, Msg: fmt.Sprintf("%s is already the queue of %s (%s); give one of them another %s=",
		what, first.Type, firstPos, KeyName)}
}

// ParseFiles finds the //queuey:queue directives in files, which make up
// package pkgName, and resolves them. Jobs are returned in source order
// (files in the order given). Every malformed directive is reported, as an
// ErrorList.
func ParseFiles(fset *token.FileSet, pkgName string, files []*ast.File) ([]Job, error) {
	p := &parser{fset: fset, pkg: pkgName}
	var jobs []Job
	for _, f := range files {
		jobs = append(jobs, p.file(f)...)
	}
	byName := map[string]Job{}
	for _, j := range jobs {
		if first, ok := byName[j.Queue.Name]; ok {
			p.errs = append(p.errs, DuplicateQueue(j, p.position(j.NameOrigin()), first, p.position(first.NameOrigin())))
			continue
		}
		byName[j.Queue.Name] = j
	}
	if err := p.errs.err(); err != nil {
		return nil, err
	}
	return jobs, nil
}

type parser struct {
	fset *token.FileSet
	pkg  string
	errs ErrorList
}

func (p *parser) position(pos token.Pos) token.Position { return p.fset.Position(pos) }

func (p *parser) errorf(pos token.Pos, key, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: p.position(pos), Key: key, Msg: fmt.Sprintf(format, args...)})
}

// docOwner is what a doc comment group belongs to: a type spec, or a
// grouped type declaration as a whole.
type docOwner struct {
	spec  *ast.TypeSpec
	group *ast.GenDecl
}

// typeDocs returns the type specs of f in source order and the owner of
// each doc comment of a type declaration.
func typeDocs(f *ast.File) ([]*ast.TypeSpec, map[*ast.CommentGroup]docOwner) {
	owners := map[*ast.CommentGroup]docOwner{}
	var specs []*ast.TypeSpec
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.GenDecl)
		if !ok || d.Tok != token.TYPE {
			continue
		}
		for _, s := range d.Specs {
			ts := s.(*ast.TypeSpec)
			specs = append(specs, ts)
			if ts.Doc != nil {
				owners[ts.Doc] = docOwner{spec: ts}
			}
		}
		if d.Doc != nil {
			if d.Lparen.IsValid() {
				owners[d.Doc] = docOwner{group: d}
			} else {
				owners[d.Doc] = docOwner{spec: d.Specs[0].(*ast.TypeSpec)}
			}
		}
	}
	return specs, owners
}

// Annotated returns the type specs of files whose doc comment has a
// //queuey:queue line, in source order, whether or not the directive is
// valid and the type can be a job. It reports nothing; ParseFiles does.
// It tells, from syntax alone, which types a generated file is to serve.
func Annotated(files []*ast.File) []*ast.TypeSpec {
	var out []*ast.TypeSpec
	for _, f := range files {
		specs, owners := typeDocs(f)
		annotated := map[*ast.TypeSpec]bool{}
		for cg, owner := range owners {
			if owner.spec == nil {
				continue
			}
			for _, c := range cg.List {
				if firstWord(c.Text, "") == Directive {
					annotated[owner.spec] = true
				}
			}
		}
		for _, ts := range specs {
			if annotated[ts] {
				out = append(out, ts)
			}
		}
	}
	return out
}

func (p *parser) file(f *ast.File) []Job {
	specs, owners := typeDocs(f)

	directives := map[*ast.TypeSpec][]*ast.Comment{}
	for _, cg := range f.Comments {
		owner, onType := owners[cg]
		where := place{onType: onType, pkgDoc: cg == f.Doc, alone: len(cg.List) == 1}
		for _, c := range cg.List {
			if !p.isDirective(c, where) {
				continue
			}
			switch {
			case onType && owner.spec != nil:
				directives[owner.spec] = append(directives[owner.spec], c)
			case onType:
				p.errorf(c.Pos(), "", "%s above a grouped type (...) declaration; put it in the doc comment of the type inside the group", Directive)
			default:
				p.errorf(c.Pos(), "", "%s is not in the doc comment of a type declaration; it must be directly above type X struct, with no blank line between", Directive)
			}
		}
	}

	var jobs []Job
	for _, ts := range specs {
		cs := directives[ts]
		if len(cs) == 0 {
			continue
		}
		for _, c := range cs[1:] {
			p.errorf(c.Pos(), "", "second %s on %s (the first is at line %d); put every key on one line", Directive, ts.Name.Name, p.position(cs[0].Pos()).Line)
		}
		if !p.isStruct(ts) {
			continue
		}
		q, pos, ok := p.resolve(ts.Name.Name, cs[0])
		if !ok {
			continue
		}
		jobs = append(jobs, Job{Type: ts.Name.Name, Pos: ts.Name.Pos(), NamePos: pos.name, LimitKeyPos: pos.limitKey, Spec: ts, Queue: q})
	}
	return jobs
}

// place is where a comment is, for telling a directive meant for a type
// from prose that mentions queuey.
type place struct {
	onType bool // in the doc comment of a type spec or grouped type declaration
	pkgDoc bool // in the package doc comment
	alone  bool // the only line of its comment group
}

// isDirective reports whether c is a //queuey:queue line. It reports a line
// that is meant as one but is not: a //queuey: directive whose word is a near
// miss of queue (any other word too, on a type), and //queuey:queue written
// with spaces after the slashes where keys or a type show it is not prose.
// Every other comment, "// queuey: the job framework" included, is prose.
func (p *parser) isDirective(c *ast.Comment, where place) bool {
	if rest, ok := strings.CutPrefix(c.Text, directivePrefix); ok {
		verb := firstWord(rest, "")
		switch {
		case verb == "queue":
			return true
		case verb == "":
			// "//queuey: ..." is not directive syntax (go/ast wants a
			// word right after the colon); it reads as prose.
		case nearQueue(verb):
			p.errorf(c.Pos(), "", "unknown directive %s%s (did you mean %s?); the only one is %s", directivePrefix, verb, Directive, Directive)
		case where.onType:
			p.errorf(c.Pos(), "", "unknown directive %s%s; the only one is %s", directivePrefix, verb, Directive)
		}
		return false
	}
	rest, ok := strings.CutPrefix(c.Text, "//")
	if !ok || where.pkgDoc {
		return false
	}
	after, ok := strings.CutPrefix(strings.TrimLeft(rest, " "), "queuey:")
	if !ok || len(rest) == len(strings.TrimLeft(rest, " ")) {
		return false
	}
	verb := firstWord(after, "")
	args := strings.TrimLeft(after[len(verb):], " \t")
	meant := (verb == "queue" || where.onType && nearQueue(verb)) &&
		looksLikeKeys(args) && (where.onType || args != "" || where.alone)
	if meant {
		written := c.Text[:len(c.Text)-len(after)+len(verb)]
		p.errorf(c.Pos(), "", "%q is not a directive: write %s with no space after //", written, Directive)
	}
	return false
}

// nearQueue reports whether word is likely a misspelling of queue: within
// two edits of it, ignoring case, or queue with something after it.
func nearQueue(word string) bool {
	w := strings.ToLower(word)
	return editDistance(w, "queue") <= 2 || strings.HasPrefix(w, "queue")
}

// looksLikeKeys reports whether every word of s is key=value, as the words
// after a directive are; an empty s does.
func looksLikeKeys(s string) bool {
	for _, w := range strings.Fields(s) {
		if k, _, ok := strings.Cut(w, "="); !ok || k == "" {
			return false
		}
	}
	return true
}

// firstWord returns prefix + the text of s up to its first space or tab.
func firstWord(s, prefix string) string {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		s = s[:i]
	}
	return prefix + s
}

// isStruct reports whether ts declares a non-generic struct type, reporting
// it when not.
func (p *parser) isStruct(ts *ast.TypeSpec) bool {
	name := ts.Name.Name
	switch ts.Type.(type) {
	case *ast.StructType:
		if ts.Assign.IsValid() {
			p.errorf(ts.Name.Pos(), "", "%s on alias %s; put it on the struct type declared as type %s struct", Directive, name, name)
			return false
		}
		if ts.TypeParams != nil && len(ts.TypeParams.List) > 0 {
			p.errorf(ts.Name.Pos(), "", "%s on generic type %s; a job type cannot have type parameters", Directive, name)
			return false
		}
		return true
	default:
		what := "type " + name + " " + types.ExprString(ts.Type)
		if ts.Assign.IsValid() {
			what = "type " + name + " = " + types.ExprString(ts.Type)
		}
		p.errorf(ts.Name.Pos(), "", "%s on %s, which is not a struct type; a job is a struct", Directive, what)
		return false
	}
}
