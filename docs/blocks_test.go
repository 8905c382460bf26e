package docs_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strings"
)

// block is one fenced block of a markdown file.
type block struct {
	line    int    // line of the block's first body line, 1-based
	lang    string // what follows the opening ```
	body    string
	before  string // the last non-blank line before the fence
	beforeN int    // its line
	compile string // what a <!-- compile: ... --> comment just before the fence says, or ""
}

// compileRE is the comment that says how a Go fragment compiles.
var compileRE = regexp.MustCompile(`^<!--\s*compile:\s*(.*?)\s*-->$`)

// pathRE is a prose line that names the file the next block is: it ends
// with the file's name in backquotes and a colon, as in "here `jobs/jobs.go`:".
var pathRE = regexp.MustCompile("`([^`]+\\.go)`:\\s*$")

// parseBlocks returns the fenced blocks of a markdown text in order.
func parseBlocks(md string) ([]block, error) {
	var blocks []block
	var before string
	var beforeN int
	sc := bufio.NewScanner(strings.NewReader(md))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		lang, ok := strings.CutPrefix(line, "```")
		if !ok {
			if strings.TrimSpace(line) != "" {
				before, beforeN = strings.TrimSpace(line), n
			}
			continue
		}
		b := block{line: n + 1, lang: strings.TrimSpace(lang), before: before, beforeN: beforeN}
		if m := compileRE.FindStringSubmatch(before); m != nil {
			b.compile = m[1]
		}
		var body []string
		closed := false
		for sc.Scan() {
			n++
			if sc.Text() == "```" {
				closed = true
				break
			}
			body = append(body, sc.Text())
		}
		if !closed {
			return nil, fmt.Errorf("%d: a block opened here is never closed", b.line-1)
		}
		b.body = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
		before, beforeN = "", 0
	}
	return blocks, sc.Err()
}

// importPaths are the packages a fragment may use without importing them,
// each under the name it is listed by: the standard library's that the
// docs use, queuey's, OpenTelemetry's trace SDK and stdout exporter, and
// the emails example's jobs, which stand in for an application's.
var importPaths = map[string]string{
	"cmp":         "cmp",
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"http":        "net/http",
	"log":         "log",
	"os":          "os",
	"sql":         "database/sql",
	"signal":      "os/signal",
	"slog":        "log/slog",
	"strings":     "strings",
	"syscall":     "syscall",
	"testing":     "testing",
	"time":        "time",
	"admin":       "github.com/queuey/queuey/admin",
	"emails":      "github.com/queuey/queuey/examples/emails/emails",
	"otelqueuey":  "github.com/queuey/queuey/otelqueuey",
	"outbox":      "github.com/queuey/queuey/outbox",
	"pgx":         "github.com/jackc/pgx/v5",
	"pgxpool":     "github.com/jackc/pgx/v5/pgxpool",
	"queueytest":  "github.com/queuey/queuey/queueytest",
	"rabbitmq":    "github.com/queuey/queuey/rabbitmq",
	"runtime":     "github.com/queuey/queuey/runtime",
	"sdktrace":    "go.opentelemetry.io/otel/sdk/trace",
	"stdouttrace": "go.opentelemetry.io/otel/exporters/stdout/stdouttrace",
}

// goFile is a Go block made into a file of the test module.
type goFile struct {
	path string // slash-separated, relative to the module root
	src  string
}

// packageRE matches the package clause that makes a block a whole file.
var packageRE = regexp.MustCompile(`(?m)^package ([A-Za-z_][A-Za-z0-9_]*)\s*$`)

// goFileOf turns the Go block b of the markdown file at mdPath into a file
// of the test module, with //line directives that make every position the
// compiler reports one of the markdown file. A block is either:
//
//   - a whole file: its first line that is not a comment is a package
//     clause. It goes to the path named by the prose line just before it
//     (ending in "`dir/file.go`:"), or else to a directory of its own.
//   - a fragment, with a comment just before it that says how it compiles:
//     <!-- compile: func(PARAMS) --> makes it the body of a function with
//     those parameters (and results, if it ends in a return); <!-- compile:
//     file --> makes it the declarations of a file. The packages of
//     importPaths it names are imported, and every variable the body of a
//     function declares at its top level is used right after it, so that
//     a fragment may show a declaration whose value it does not use.
func goFileOf(mdPath string, b block) (goFile, error) {
	where := fmt.Sprintf("%s:%d", mdPath, b.line-1)
	dir := fmt.Sprintf("block_%d", b.line-1)
	if pkg, ok := packageOf(b.body); ok {
		if b.compile != "" {
			return goFile{}, fmt.Errorf("%s: a whole file (package %s) needs no compile comment", where, pkg)
		}
		name := dir + "/doc.go"
		if strings.HasSuffix(pkg, "_test") {
			name = dir + "/doc_test.go"
		}
		if m := pathRE.FindStringSubmatch(b.before); m != nil {
			name = path.Clean(m[1])
		}
		return goFile{path: name, src: fmt.Sprintf("//line %s:%d:1\n%s", mdPath, b.line, b.body)}, nil
	}
	var head, tail string
	switch {
	case b.compile == "":
		return goFile{}, fmt.Errorf("%s: a go block that is neither a whole file (no package clause) nor preceded by <!-- compile: func(PARAMS) --> or <!-- compile: file -->", where)
	case b.compile == "file":
	case strings.HasPrefix(b.compile, "func("):
		head = "; func _" + strings.TrimPrefix(b.compile, "func") + " {"
		tail = "}\n"
	default:
		return goFile{}, fmt.Errorf("%s: <!-- compile: %s -->: want func(PARAMS) or file", where, b.compile)
	}
	// The imports and the function's head sit on one line, which the
	// compiler reports as the compile comment's.
	const pre = "package doc\nimport ()"
	body := fmt.Sprintf("%s\n//line %s:%d:1\n%s", head, mdPath, b.line, b.body)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fragment.go", pre+body+tail, 0)
	if err != nil {
		// Let the compiler say where, through the //line directives.
		f = nil
	}
	if f != nil && tail != "" {
		// Each top-level declaration is followed, on the same line, by a
		// use of what it declares ("x := f(); _ = x"), so no line moves.
		decls := topLevelVars(f)
		for i := len(decls) - 1; i >= 0; i-- {
			at := fset.Position(decls[i].end).Offset - len(pre)
			body = body[:at] + "; _ = " + strings.Join(decls[i].names, "; _ = ") + body[at:]
		}
	}
	var imports []string
	if f != nil {
		for _, id := range f.Unresolved {
			if p, ok := importPaths[id.Name]; ok {
				imp := fmt.Sprintf("%s %q", id.Name, p)
				if !slices.Contains(imports, imp) {
					imports = append(imports, imp)
				}
			}
		}
	}
	slices.Sort(imports)
	src := fmt.Sprintf("package doc\n//line %s:%d:1\nimport (%s)%s%s", mdPath, b.beforeN, strings.Join(imports, "; "), body, tail)
	return goFile{path: dir + "/doc.go", src: src}, nil
}

// packageOf returns the package name of a block that is a whole file: one
// whose first line that is neither blank nor a // comment is a package
// clause.
func packageOf(body string) (string, bool) {
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		m := packageRE.FindStringSubmatch(line)
		if m == nil {
			return "", false
		}
		return m[1], true
	}
	return "", false
}

// declaration is a top-level statement of a function body that declares
// variables.
type declaration struct {
	end   token.Pos // where the statement ends
	names []string  // what it declares, but _
}

// topLevelVars returns the statements of the body of f's one function that
// declare variables at its top level.
func topLevelVars(f *ast.File) []declaration {
	var decls []declaration
	add := func(end token.Pos, ids []*ast.Ident) {
		var names []string
		for _, id := range ids {
			if id.Name != "_" {
				names = append(names, id.Name)
			}
		}
		if len(names) > 0 {
			decls = append(decls, declaration{end, names})
		}
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		for _, st := range fn.Body.List {
			switch st := st.(type) {
			case *ast.AssignStmt:
				if st.Tok == token.DEFINE {
					var ids []*ast.Ident
					for _, e := range st.Lhs {
						if id, ok := e.(*ast.Ident); ok {
							ids = append(ids, id)
						}
					}
					add(st.End(), ids)
				}
			case *ast.DeclStmt:
				if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
					var ids []*ast.Ident
					for _, s := range gd.Specs {
						ids = append(ids, s.(*ast.ValueSpec).Names...)
					}
					add(st.End(), ids)
				}
			}
		}
	}
	return decls
}
