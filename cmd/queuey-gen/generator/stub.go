package generator

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/annotations"
)

// stub returns, parsed into p.Fset under the name of p's generated file,
// declarations of what that file is to declare: per annotated type X,
// XQueue, EnqueueX, EnqueueManyX and HandleX with their generated signatures and no
// bodies worth the name, and Queues. It works from files, the syntax of p
// without its generated file, alone, so that a package whose own code
// uses those names can be type-checked before the file exists or while
// it is stale.
//
// Every type whose doc comment has the directive counts, valid or not, so
// that a use of its names is not what gets reported when the annotation
// itself is wrong; generic types, whose names the generated file cannot
// declare, do not. A name the package already declares is left out: Generate
// reports the clash.
//
// stub returns nil when there is nothing to declare, or when files do not
// refer to any of it: then the package is checked as well without it, and
// without loading what it imports.
func stub(p *packages.Package, files []*ast.File) (*ast.File, error) {
	declared := packageNames(files)
	taken := func(name string) bool { return declared[name] }

	f := newFile(p.PkgPath, p.Name, taken)
	jobs, names := 0, map[string]bool{}
	add := func(name string, decl jen.Code) {
		if !taken(name) && !names[name] {
			names[name] = true
			f.Add(decl)
		}
	}
	for _, ts := range annotations.Annotated(files) {
		if ts.TypeParams != nil && len(ts.TypeParams.List) > 0 {
			continue
		}
		jobs++
		n := generatedNames(ts.Name.Name)
		add(n.queue, jen.Var().Id(n.queue).Add(queueVarType()))
		add(n.job, jen.Var().Id(n.job).Add(jobVarType(ts.Name.Name)))
		add(n.enqueue, enqueueFunc(n, ts.Name.Name).Block(jen.Return(jen.Lit(""), jen.Nil())))
		add(n.enqueueMany, enqueueManyFunc(n, ts.Name.Name).Block(jen.Return(jen.Nil(), jen.Nil())))
		add(n.handle, handleFunc(n, ts.Name.Name).Block())
	}
	if jobs > 0 {
		add(queuesFunc, queuesFuncDecl().Block(jen.Return(jen.Nil())))
	}
	if !uses(files, names) {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("render declarations of %s: %w", OutputName, err)
	}
	return parser.ParseFile(p.Fset, outputFile(p), buf.Bytes(), parser.SkipObjectResolution)
}

// uses reports whether files refer to any of names, by syntax alone: a
// package that does not is checked as well without declarations of them,
// and without loading what they import.
func uses(files []*ast.File, names map[string]bool) bool {
	found := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && names[id.Name] && !found {
				found = true
			}
			return !found
		})
	}
	return found
}

// packageNames returns the names files declare at package scope.
func packageNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, id := range s.Names {
							names[id.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// stubImports are the packages a stub may import beyond those the package
// itself does.
var stubImports = []string{"context", runtimePath}
