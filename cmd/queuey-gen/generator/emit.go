package generator

import (
	"bytes"
	"fmt"
	"go/format"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/queuey/queuey/annotations"
	"github.com/queuey/queuey/runtime"
)

const runtimePath = "github.com/queuey/queuey/runtime"

// imports are the packages a generated file uses, by path, with their
// package names.
var imports = []struct{ path, name string }{
	{"context", "context"},
	{"time", "time"},
	{runtimePath, "runtime"},
}

// newFile starts a file of package pkgName at pkgPath that imports each of
// imports under its own name or, when the package declares that name
// itself (taken reports its package-scope names), under an alias.
func newFile(pkgPath, pkgName string, taken func(string) bool) *jen.File {
	f := jen.NewFilePathName(pkgPath, pkgName)
	for _, imp := range imports {
		if name := importName(imp.name, taken); name != imp.name {
			f.ImportAlias(imp.path, name)
		} else {
			f.ImportName(imp.path, name)
		}
	}
	return f
}

// importName returns the name a generated file imports package name by:
// name itself unless the package declares it at package scope, where an
// import of that name would not compile, else queuey+name, then
// queuey+name+"2" and on.
func importName(name string, taken func(string) bool) string {
	if !taken(name) {
		return name
	}
	alias := "queuey" + name
	for i := 2; taken(alias); i++ {
		alias = "queuey" + name + strconv.Itoa(i)
	}
	return alias
}

// emit renders the generated file of package pkgName at pkgPath. taken
// reports the names the package declares at package scope.
func emit(pkgPath, pkgName string, jobs []annotations.Job, taken func(string) bool) ([]byte, error) {
	f := newFile(pkgPath, pkgName, taken)
	f.HeaderComment(Header[len("// "):])

	queueVars := make([]jen.Code, len(jobs))
	for i, j := range jobs {
		n := generatedNames(j.Type)
		queueVars[i] = jen.Id(n.queue)

		comment(f, "%s is the queue of %s jobs: its %s\nannotation, resolved.", n.queue, j.Type, annotations.Directive)
		f.Var().Id(n.queue).Op("=").Add(queueVarType()).Custom(multi, queueFields(j.Queue)...)
		f.Line()

		comment(f, "%s is %s with its job type, %s, for typed helpers\nsuch as those of package queueytest.", n.job, n.queue, j.Type)
		f.Var().Id(n.job).Op("=").Add(jobVarType(j.Type)).Values(jen.Id("Queue").Op(":").Id(n.queue))
		f.Line()

		comment(f, "%s encodes job with msgpack and enqueues it onto\n%s through p. It returns the job's ID once the backend\nhas stored the job.", n.enqueue, n.queue)
		f.Add(enqueueFunc(n, j.Type).Block(
			jen.Return(jen.Qual(runtimePath, "Enqueue").Call(jen.Id("ctx"), jen.Id("p"), jen.Id(n.queue), jen.Id("job"), jen.Id("opts").Op("..."))),
		))
		f.Line()

		comment(f, "%s encodes each job with msgpack and enqueues them onto\n%s through p, many in flight at once where the backend\ncan. It returns every job's ID in order, and a *runtime.BatchError\nnaming the jobs that were not enqueued, if any.", n.enqueueMany, n.queue)
		f.Add(enqueueManyFunc(n, j.Type).Block(
			jen.Return(jen.Qual(runtimePath, "EnqueueMany").Call(jen.Id("ctx"), jen.Id("p"), jen.Id(n.queue), jen.Id("jobs"), jen.Id("opts").Op("..."))),
		))
		f.Line()

		handleDoc := "%s registers h on w as the handler of %s.\nA payload that does not decode into a %s, or a job of another\nkind on the queue, is dead-lettered without running h."
		if j.Queue.Schedule != "" {
			handleDoc += "\nWhile w runs, it also enqueues a zero %[3]s at each tick of\nthe schedule, one worker of all at a time (see runtime.Periodic)."
		}
		comment(f, handleDoc, n.handle, n.queue, j.Type)
		f.Add(handleFunc(n, j.Type).Block(
			jen.Qual(runtimePath, "Handle").Call(jen.Id("w"), jen.Id(n.queue), jen.Id("h")),
		))
		f.Line()
	}

	comment(f, "%s returns the queue of every job of package %s, in source\norder: for runtime.NewProducer, and for tools that declare or inspect\nqueues.", queuesFunc, pkgName)
	f.Add(queuesFuncDecl().Block(
		jen.Return(jen.Index().Qual(runtimePath, "QueueConfig").Custom(multi, queueVars...)),
	))

	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("render %s: %w", OutputName, err)
	}
	return groupImports(buf.Bytes())
}

// groupImports puts the standard library imports of src, which jennifer
// sorts in one group, in a group before the others, as goimports would.
func groupImports(src []byte) ([]byte, error) {
	const open, end = "\nimport (\n", "\n)\n"
	start := bytes.Index(src, []byte(open))
	if start < 0 {
		return src, nil
	}
	start += len(open)
	n := bytes.Index(src[start:], []byte(end))
	if n < 0 {
		return src, nil
	}
	var std, other []string
	for _, line := range strings.Split(string(src[start:start+n]), "\n") {
		// A line is `\t"path"` or `\talias "path"`.
		path := line[strings.IndexByte(line, '"'):]
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	block := strings.Join(std, "\n")
	if len(std) > 0 && len(other) > 0 {
		block += "\n\n"
	}
	block += strings.Join(other, "\n")
	out := slices.Concat(src[:start], []byte(block), src[start+n:])
	formatted, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("format %s: %w", OutputName, err)
	}
	return formatted, nil
}

// The signatures of the generated functions, without their bodies; the
// declarations Load type-checks a package against (stub.go) share them.

// enqueueFunc is func EnqueueX(ctx, p, job X, opts...) (string, error).
func enqueueFunc(n names, typ string) *jen.Statement {
	return jen.Func().Id(n.enqueue).Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("p").Op("*").Qual(runtimePath, "Producer"),
		jen.Id("job").Id(typ),
		jen.Id("opts").Op("...").Qual(runtimePath, "EnqueueOption"),
	).Params(jen.String(), jen.Error())
}

// enqueueManyFunc is func EnqueueManyX(ctx, p, jobs []X, opts...) ([]string, error).
func enqueueManyFunc(n names, typ string) *jen.Statement {
	return jen.Func().Id(n.enqueueMany).Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("p").Op("*").Qual(runtimePath, "Producer"),
		jen.Id("jobs").Index().Id(typ),
		jen.Id("opts").Op("...").Qual(runtimePath, "EnqueueOption"),
	).Params(jen.Index().String(), jen.Error())
}

// handleFunc is func HandleX(w, h func(ctx, job X) error).
func handleFunc(n names, typ string) *jen.Statement {
	return jen.Func().Id(n.handle).Params(
		jen.Id("w").Op("*").Qual(runtimePath, "Worker"),
		jen.Id("h").Func().Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("job").Id(typ)).Error(),
	)
}

// queuesFuncDecl is func Queues() []runtime.QueueConfig.
func queuesFuncDecl() *jen.Statement {
	return jen.Func().Id(queuesFunc).Params().Index().Qual(runtimePath, "QueueConfig")
}

// queueVarType is the type of XQueue.
func queueVarType() *jen.Statement { return jen.Qual(runtimePath, "QueueConfig") }

// jobVarType is the type of XJob, runtime.Job[X].
func jobVarType(typ string) *jen.Statement {
	return jen.Qual(runtimePath, "Job").Types(jen.Id(typ))
}

// comment adds a doc comment of one or more lines.
func comment(f *jen.File, format string, args ...any) {
	for _, line := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		f.Comment(line)
	}
}

// multi renders a composite literal one element per line.
var multi = jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}

// queueFields returns the keyed fields of a QueueConfig literal for q,
// leaving out a zero Timeout, an empty Delay (the backend's default mode),
// an empty DelayExchange, which the annotation cannot set, an empty
// Schedule and Missed, and a zero Limit, Rate and LimitKey (none).
func queueFields(q runtime.QueueConfig) []jen.Code {
	kv := func(k string, v jen.Code) jen.Code { return jen.Id(k).Op(":").Add(v) }
	fields := []jen.Code{
		kv("Name", jen.Lit(q.Name)),
		kv("Kind", jen.Lit(q.Kind)),
		kv("Prefetch", jen.Lit(q.Prefetch)),
		kv("Concurrency", jen.Lit(q.Concurrency)),
		kv("MaxPriority", maxPriority(q.MaxPriority)),
		kv("MaxAttempts", jen.Lit(q.MaxAttempts)),
		kv("RetryBase", duration(q.RetryBase)),
		kv("RetryMax", duration(q.RetryMax)),
	}
	if q.Timeout > 0 {
		fields = append(fields, kv("Timeout", duration(q.Timeout)))
	}
	fields = append(fields,
		kv("QueueType", jen.Qual(runtimePath, queueTypeConst[q.QueueType])),
	)
	if q.Delay != "" {
		fields = append(fields, kv("Delay", jen.Qual(runtimePath, delayConst[q.Delay])))
	}
	if q.DelayExchange != "" {
		fields = append(fields, kv("DelayExchange", jen.Lit(q.DelayExchange)))
	}
	if q.Schedule != "" {
		fields = append(fields, kv("Schedule", jen.Lit(q.Schedule)))
	}
	if q.Missed != "" {
		fields = append(fields, kv("Missed", jen.Qual(runtimePath, missedConst[q.Missed])))
	}
	if q.Limit > 0 {
		fields = append(fields, kv("Limit", jen.Lit(q.Limit)))
	}
	if !q.Rate.IsZero() {
		fields = append(fields, kv("Rate", jen.Qual(runtimePath, "Rate").Values(kv("N", jen.Lit(q.Rate.N)), kv("Per", duration(q.Rate.Per)))))
	}
	if q.LimitKey != "" {
		fields = append(fields, kv("LimitKey", jen.Lit(q.LimitKey)))
	}
	return fields
}

// maxPriority renders a resolved MaxPriority: runtime.NoPriority for none
// (max_priority=0), since a zero would mean runtime.DefaultMaxPriority.
func maxPriority(n int) jen.Code {
	if n == runtime.NoPriority {
		return jen.Qual(runtimePath, "NoPriority")
	}
	return jen.Lit(n)
}

var queueTypeConst = map[runtime.QueueType]string{
	runtime.QueueClassic: "QueueClassic",
	runtime.QueueQuorum:  "QueueQuorum",
}

var missedConst = map[runtime.Missed]string{
	runtime.MissedRunOnce: "MissedRunOnce",
	runtime.MissedSkip:    "MissedSkip",
}

var delayConst = map[runtime.DelayMode]string{
	runtime.DelayQueue:  "DelayQueue",
	runtime.DelayPlugin: "DelayPlugin",
	runtime.DelayLadder: "DelayLadder",
}

// duration renders d in the largest unit that divides it: time.Hour,
// 90 * time.Second, time.Duration(1500) for odd values.
func duration(d time.Duration) jen.Code {
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"Hour", time.Hour}, {"Minute", time.Minute}, {"Second", time.Second}, {"Millisecond", time.Millisecond}, {"Microsecond", time.Microsecond}} {
		if d%u.d != 0 {
			continue
		}
		if d == u.d {
			return jen.Qual("time", u.name)
		}
		return jen.Id(strconv.FormatInt(int64(d/u.d), 10)).Op("*").Qual("time", u.name)
	}
	return jen.Qual("time", "Duration").Call(jen.Id(strconv.FormatInt(int64(d), 10)))
}
