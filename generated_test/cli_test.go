package generatedtest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
	"github.com/queuey/queuey/internal/testenv/tempmod"
)

const shopJobs = `package shop

//go:generate go tool queuey-gen

//queuey:queue prefetch=3
type ShipOrder struct{ ID string }
`

// cliModule makes a temporary module holding package shop with src as its
// jobs.go, and makes it the working directory and environment of Run.
func cliModule(t *testing.T, src string) (pkgDir string) {
	t.Helper()
	mod, env := tempmod.New(t, tempmod.Root(t), "example.com/golden")
	pkgDir = filepath.Join(mod, "shop")
	tempmod.WriteFile(t, filepath.Join(pkgDir, "jobs.go"), []byte(src))
	for _, kv := range env[len(env)-3:] {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Chdir(pkgDir)
	return pkgDir
}

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	code := generator.Run(args, io.Discard, &stderr)
	return code, stderr.String()
}

// dirNames lists the entries of dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestUsage(t *testing.T) {
	code, out := run(t, "-h")
	if code != 0 || !strings.HasPrefix(out, "usage: queuey-gen [-check | -accept | -schema] [packages]") {
		t.Errorf("-h: exit %d, output %q; want 0 and the usage", code, out)
	}
	if code, _ := run(t, "-nope"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

// TestRunKeepsOutputOnError checks that a failed run leaves an existing
// queuey_gen.go byte for byte and creates no file.
func TestRunKeepsOutputOnError(t *testing.T) {
	dir := cliModule(t, shopJobs)
	out := filepath.Join(dir, generator.OutputName)
	if code, msg := run(t); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, msg)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("first run wrote no %s: %v", generator.OutputName, err)
	}
	if !strings.Contains(string(before), "Prefetch:    3,") {
		t.Fatalf("output does not carry prefetch=3:\n%s", before)
	}

	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(strings.Replace(shopJobs, "prefetch=3", "prefetch=0", 1)))
	code, msg := run(t)
	if code != 1 {
		t.Errorf("run on a bad annotation: exit %d, want 1", code)
	}
	if want := "jobs.go:5:25: bad prefetch=0: want an integer in 1..65535\nqueuey-gen: no file written\n"; msg != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", msg, want)
	}
	after, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("%s changed by a failed run (err %v)", generator.OutputName, err)
	}
	if names := dirNames(t, dir); len(names) != 3 {
		t.Errorf("directory holds %q after a failed run, want jobs.go, %s and %s only", names, generator.OutputName, generator.RecordName)
	}
}

// TestRunCreatesNothingOnError checks that a failed first run creates no
// file at all.
func TestRunCreatesNothingOnError(t *testing.T) {
	dir := cliModule(t, strings.Replace(shopJobs, "ID string", "Done chan int", 1))
	code, msg := run(t, ".")
	if code != 1 || !strings.Contains(msg, "jobs.go:6:24: field ShipOrder.Done (chan int) cannot be carried by msgpack") {
		t.Errorf("exit %d, stderr %q; want 1 and the field named", code, msg)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q after a failed run, want jobs.go only", names)
	}
}

// TestRunRefusesForeignFile checks that a queuey_gen.go not written by
// queuey-gen is neither replaced nor removed.
func TestRunRefusesForeignFile(t *testing.T) {
	dir := cliModule(t, shopJobs)
	mine := []byte("package shop\n\n// Hand-written.\nvar Mine = 1\n")
	out := filepath.Join(dir, generator.OutputName)
	tempmod.WriteFile(t, out, mine)
	code, msg := run(t)
	if code != 1 || !strings.Contains(msg, "was not written by queuey-gen") {
		t.Errorf("exit %d, stderr %q; want 1 and a refusal", code, msg)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, mine) {
		t.Errorf("hand-written %s was changed to:\n%s", generator.OutputName, got)
	}
}

// TestRunDirectoryArgument checks that a bare directory name is taken for a
// directory, not an import path.
func TestRunDirectoryArgument(t *testing.T) {
	dir := cliModule(t, shopJobs)
	t.Chdir(filepath.Dir(dir))
	if code, msg := run(t, "shop"); code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, generator.OutputName)); err != nil {
		t.Errorf("no output: %v", err)
	}
}

// TestGoGenerate runs the //go:generate line the way users do, then builds
// and vets the result.
func TestGoGenerate(t *testing.T) {
	mod, env := tempmod.New(t, tempmod.Root(t), "example.com/golden")
	dir := filepath.Join(mod, "shop")
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(shopJobs))
	tempmod.Go(t, mod, env, "generate", "./...")
	got, err := os.ReadFile(filepath.Join(dir, generator.OutputName))
	if err != nil {
		t.Fatalf("go generate wrote no %s: %v", generator.OutputName, err)
	}
	for _, want := range []string{generator.Header, "func EnqueueShipOrder(", "func HandleShipOrder(", "func Queues()"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	tempmod.Go(t, mod, env, "vet", "./...")
}

// TestCheck: -check names a missing and then a stale queuey_gen.go (an
// annotation edited without regenerating), exits 1 and writes nothing;
// on fresh output it is silent and exits 0.
func TestCheck(t *testing.T) {
	src := strings.Replace(shopJobs, "prefetch=3", "prefetch=3 max_attempts=12", 1)
	dir := cliModule(t, src)
	out := filepath.Join(dir, generator.OutputName)

	code, msg := run(t, "-check")
	want := generator.OutputName + ": missing\n" + generator.RecordName + ": missing\nqueuey-gen: 2 generated file(s) not fresh: run go generate and commit the result\n"
	if code != 1 || msg != want {
		t.Errorf("-check before generating: exit %d, stderr %q; want 1 and %q", code, msg, want)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("-check wrote files: directory holds %q", names)
	}

	if code, msg := run(t); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, msg)
	}
	if code, msg := run(t, "-check", "."); code != 0 || msg != "" {
		t.Errorf("-check on fresh output: exit %d, stderr %q; want 0 and nothing", code, msg)
	}

	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(strings.Replace(src, "max_attempts=12", "max_attempts=3", 1)))
	code, msg = run(t, "-check")
	want = generator.OutputName + ": stale: it differs from what queuey-gen generates from the annotations now\n" +
		"queuey-gen: 1 generated file(s) not fresh: run go generate and commit the result\n"
	if code != 1 || msg != want {
		t.Errorf("-check after an edit: exit %d, stderr %q; want 1 and %q", code, msg, want)
	}
	if after, _ := os.ReadFile(out); !bytes.Equal(before, after) {
		t.Errorf("-check changed %s", generator.OutputName)
	}

	// A package whose jobs are all gone strands the jobs in flight on
	// their queues: refused until accepted, then both files are stale,
	// and removed by -accept.
	if code, msg := run(t); code != 0 {
		t.Fatalf("generate: exit %d: %s", code, msg)
	}
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte("package shop\n"))
	if code, msg := run(t, "-check"); code != 1 || !strings.Contains(msg, generator.RecordName+`: breaking change: job shop.ShipOrder (queue "shop.ship_order") is gone`) {
		t.Errorf("-check with no jobs left: exit %d, stderr %q; want 1 and the job named gone", code, msg)
	}
	if code, msg := run(t, "-accept"); code != 0 || !strings.Contains(msg, "is gone: jobs in flight on its queue are no longer handled; drain the queue before the workers that handle it stop (accepted)") {
		t.Errorf("-accept with no jobs left: exit %d, stderr %q; want 0 and the change noted accepted", code, msg)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q after -accept with no jobs left, want jobs.go only", names)
	}
}

// TestRecordRefusesBreaking follows a job struct through changes as go
// generate meets them: a safe change is recorded and noted; a breaking
// one is refused at the field's position and leaves every file as it
// was, for -check too; -accept records it.
func TestRecordRefusesBreaking(t *testing.T) {
	const v1 = "package shop\n\n//go:generate go tool queuey-gen\n\n//queuey:queue\ntype ShipOrder struct {\n\tID  string\n\tQty int32\n}\n"
	dir := cliModule(t, v1)
	record := filepath.Join(dir, generator.RecordName)
	if code, msg := run(t); code != 0 || msg != "" {
		t.Fatalf("first run: exit %d, stderr %q; want 0 and nothing", code, msg)
	}
	first, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("first run recorded nothing: %v", err)
	}
	if !strings.Contains(string(first), `{"key":"Qty","go":"Qty","type":"int32"}`) {
		t.Fatalf("record lacks Qty:\n%s", first)
	}

	// Safe: widened, and a field added. -check says the record is stale
	// until it is regenerated.
	v2 := strings.Replace(v1, "Qty int32\n", "Qty int64\n\tGift bool\n", 1)
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(v2))
	code, msg := run(t, "-check")
	wantNotes := "jobs.go:8:2: safe change: ShipOrder.Qty changes from int32 to int64: every value of the old type fits\n" +
		"jobs.go:9:2: safe change: ShipOrder.Gift is added: jobs in flight lack key \"Gift\", so it decodes as its zero value\n"
	if want := wantNotes + generator.RecordName + ": stale: the job structs changed since it was recorded, in ways jobs in flight survive\n" +
		"queuey-gen: 1 generated file(s) not fresh: run go generate and commit the result\n"; code != 1 || msg != want {
		t.Errorf("-check after a safe change: exit %d, stderr:\n%s\nwant 1 and:\n%s", code, msg, want)
	}
	if code, msg := run(t); code != 0 || msg != wantNotes {
		t.Errorf("run after a safe change: exit %d, stderr:\n%s\nwant 0 and:\n%s", code, msg, wantNotes)
	}
	if code, msg := run(t, "-check"); code != 0 || msg != "" {
		t.Errorf("-check once recorded: exit %d, stderr %q; want 0 and nothing", code, msg)
	}
	recorded, _ := os.ReadFile(record)

	// Breaking: narrowed again. Refused by a run, by -check and by
	// go generate, at the field.
	v3 := strings.Replace(v2, "Qty int64", "Qty int16", 1)
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(v3))
	breaking := "jobs.go:8:2: breaking change: ShipOrder.Qty changes from int64 to int16: a value in flight that does not fit the narrower type is refused, and its job is dead-lettered\n" +
		"queuey-gen: 1 change(s) to jobs that jobs in flight would not survive: docs/upgrades.md says how to roll each out; then record them with go tool queuey-gen -accept\n"
	if code, msg := run(t); code != 1 || msg != breaking+"queuey-gen: no file written\n" {
		t.Errorf("run after a breaking change: exit %d, stderr:\n%s\nwant 1 and:\n%s", code, msg, breaking)
	}
	if code, msg := run(t, "-check"); code != 1 || msg != breaking {
		t.Errorf("-check after a breaking change: exit %d, stderr:\n%s\nwant 1 and:\n%s", code, msg, breaking)
	}
	if got, _ := os.ReadFile(record); !bytes.Equal(got, recorded) {
		t.Errorf("a refused change rewrote the record:\n%s", got)
	}

	// Accepted on purpose.
	if code, msg := run(t, "-accept"); code != 0 || !strings.Contains(msg, "ShipOrder.Qty changes from int64 to int16: a value in flight that does not fit the narrower type is refused, and its job is dead-lettered (accepted)\n") {
		t.Errorf("-accept: exit %d, stderr %q; want 0 and the change noted accepted", code, msg)
	}
	if code, msg := run(t, "-check"); code != 0 || msg != "" {
		t.Errorf("-check once accepted: exit %d, stderr %q; want 0 and nothing", code, msg)
	}
	if got, _ := os.ReadFile(record); !strings.Contains(string(got), `{"key":"Qty","go":"Qty","type":"int16"}`) {
		t.Errorf("record after -accept lacks the int16:\n%s", got)
	}
	if code, _ := run(t, "-accept", "-check"); code != 2 {
		t.Errorf("-accept -check: exit %d, want 2", code)
	}
}

// TestRecordForeignOrBroken: a queuey_schema.json that queuey-gen did not
// write is neither read nor replaced; a record that does not parse is
// named, and nothing is written.
func TestRecordForeignOrBroken(t *testing.T) {
	dir := cliModule(t, shopJobs)
	record := filepath.Join(dir, generator.RecordName)
	for _, c := range []struct{ content, want string }{
		{`{"mine": true}`, generator.RecordName + ` was not written by queuey-gen (it does not start with {"queuey_schema": ...); move it away or delete it`},
		{"{\n  \"queuey_schema\": 1,\n  \"jobs\": [\n", generator.RecordName + ": not a queuey-gen payload schema record: unexpected EOF; restore it from version control, or delete it to record the jobs as they are now"},
		{"{\n  \"queuey_schema\": 7}\n", generator.RecordName + ": queuey_schema 7, want 1: a record queuey-gen does not read; delete it to record the jobs as they are now"},
	} {
		tempmod.WriteFile(t, record, []byte(c.content))
		for _, args := range [][]string{nil, {"-check"}} {
			code, msg := run(t, args...)
			if code != 1 || !strings.HasPrefix(msg, c.want+"\n") {
				t.Errorf("%v over %q: exit %d, stderr %q; want 1 and %q", args, c.content, code, msg, c.want)
			}
		}
		if got, _ := os.ReadFile(record); string(got) != c.content {
			t.Errorf("record changed to %q", got)
		}
		if _, err := os.Stat(filepath.Join(dir, generator.OutputName)); err == nil {
			t.Errorf("%s written beside a record that was refused", generator.OutputName)
		}
	}
}

// TestDiagnosticPaths: a diagnostic names its file relative to the
// directory queuey-gen runs in when the file is under it, and by absolute
// path otherwise; under go generate, which runs it in the package's
// directory whatever directory it was run from, by absolute path, so that
// the path is found from where go generate ran.
func TestDiagnosticPaths(t *testing.T) {
	bad := strings.Replace(shopJobs, "prefetch=3", "prefetch=3 max_attempt=2", 1)
	const pos = "jobs.go:5:27: "
	dir := cliModule(t, bad)
	mod := filepath.Dir(dir)
	outside := filepath.Join(mod, "tools") // in the module, beside the package
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, wd string
		args     []string
		gen      bool // as go generate runs it
		want     string
	}{
		{"package directory", dir, nil, false, pos},
		{"module root", mod, []string{"./..."}, false, filepath.Join("shop", pos)},
		{"beside", outside, []string{"../shop"}, false, filepath.Join(dir, pos)},
		{"go generate", dir, nil, true, filepath.Join(dir, pos)},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(c.wd)
			if c.gen {
				t.Setenv("GOFILE", "jobs.go")
				t.Setenv("GOPACKAGE", "shop")
			}
			code, out := run(t, c.args...)
			if code != 1 || !strings.HasPrefix(out, c.want) {
				t.Fatalf("exit %d:\n%s\nwant exit 1 and a first line that starts with %q", code, out, c.want)
			}
		})
	}
}

// TestGoGenerateDiagnosticPath runs go generate ./... from the module's
// root over a bad annotation: the error names the file by an absolute
// path, found from there, not relative to the package's directory.
func TestGoGenerateDiagnosticPath(t *testing.T) {
	mod, env := tempmod.New(t, tempmod.Root(t), "example.com/golden")
	dir := filepath.Join(mod, "shop")
	tempmod.WriteFile(t, filepath.Join(dir, "jobs.go"), []byte(strings.Replace(shopJobs, "prefetch=3", "prefetch=3 max_attempt=2", 1)))
	cmd := exec.Command("go", "generate", "./...")
	cmd.Dir, cmd.Env = mod, env
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("go generate succeeded over a bad annotation:\n%s", out)
	}
	if want := filepath.Join(dir, "jobs.go") + ":5:27: "; !strings.Contains(string(out), "\n"+want) && !strings.HasPrefix(string(out), want) {
		t.Fatalf("go generate said:\n%s\nwant a line that starts with %q", out, want)
	}
}
