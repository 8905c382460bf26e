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
	// Type is the Go type name. Queue.Kind is the same.
	Type string
	// Pos is the position of the type's name.
	Pos token.Pos
	// Spec is the type's declaration.
	Spec *ast.TypeSpec
	// Queue is the resolved configuration: every key given, every default
	// applied.
	Queue runtime.QueueConfig
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
			p.errorf(j.Pos, KeyName, "queue name %q of %s is already the queue of %s (%s); give one of them another name=",
				j.Queue.Name, j.Type, first.Type, p.position(first.Pos))
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

func (p *parser) file(f *ast.File) []Job {
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

	directives := map[*ast.TypeSpec][]*ast.Comment{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if !p.isDirective(c) {
				continue
			}
			owner, ok := owners[cg]
			switch {
			case ok && owner.spec != nil:
				directives[owner.spec] = append(directives[owner.spec], c)
			case ok:
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
		q, ok := p.resolve(ts.Name.Name, cs[0])
		if !ok {
			continue
		}
		jobs = append(jobs, Job{Type: ts.Name.Name, Pos: ts.Name.Pos(), Spec: ts, Queue: q})
	}
	return jobs
}

// isDirective reports whether c is a //queuey: line, reporting one that
// is malformed.
func (p *parser) isDirective(c *ast.Comment) bool {
	text := c.Text
	if !strings.HasPrefix(text, directivePrefix) {
		if rest, ok := strings.CutPrefix(text, "//"); ok && strings.HasPrefix(strings.TrimLeft(rest, " \t"), "queuey:") {
			p.errorf(c.Pos(), "", "%q is not a directive: write %s with no space after //", firstWord(strings.TrimLeft(rest, " \t"), "// "), Directive)
		}
		return false
	}
	verb := firstWord(text, "")
	if verb != Directive {
		msg := fmt.Sprintf("unknown directive %s", verb)
		if s := suggest(strings.TrimPrefix(verb, directivePrefix), []string{"queue"}); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", Directive)
		}
		p.errorf(c.Pos(), "", "%s; the only one is %s", msg, Directive)
		return false
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
