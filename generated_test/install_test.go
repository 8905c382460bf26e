package generatedtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"

	"github.com/queuey/queuey/internal/testenv/tempmod"
)

// readmeStep is one fenced block of the README's Install section: a shell
// script to run, a file to write, or the output the script before it
// prints.
type readmeStep struct {
	lang string // sh, go or text
	path string // for go: the file, named in backquotes just before it
	body string
}

// installSteps returns the fenced blocks of the "## Install" section of
// README.md, in order.
func installSteps(t *testing.T, readme string) []readmeStep {
	t.Helper()
	start := strings.Index(readme, "\n## Install\n")
	if start < 0 {
		t.Fatal("README.md has no ## Install section")
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	pathRE := regexp.MustCompile("`([^`]+\\.go)`[^`]*$")
	var steps []readmeStep
	var prose []string
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		line := sc.Text()
		lang, ok := strings.CutPrefix(line, "```")
		if !ok {
			prose = append(prose, line)
			continue
		}
		step := readmeStep{lang: lang}
		if lang == "go" {
			m := pathRE.FindStringSubmatch(strings.Join(prose, " "))
			if m == nil {
				t.Fatalf("README Install: no `file.go` named before the go block after %q", strings.Join(prose, " "))
			}
			step.path = m[1]
		}
		var body []string
		for sc.Scan() && sc.Text() != "```" {
			body = append(body, sc.Text())
		}
		step.body = strings.Join(body, "\n") + "\n"
		steps = append(steps, step)
		prose = nil
	}
	return steps
}

// TestReadmeInstall follows the README's Install section verbatim in a
// fresh module in a temporary directory: its shell blocks run as written
// (go mod init, go get, go get -tool, go generate, go run), its Go blocks
// are the files, and the last script must print the text block after it.
//
// What differs from a user's machine: github.com/queuey/queuey has no
// published version, so go get finds this checkout, zipped as version
// v0.0.0-00010101000000-000000000000, in a file proxy put first in
// GOPROXY, and GONOSUMDB leaves it out of the checksum database. The
// module cache is a fresh one (GOFLAGS=-modcacherw, so that it can be
// removed), filled from this machine's cache of downloads before the
// configured proxy is asked.
func TestReadmeInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module from scratch")
	}
	root := tempmod.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps := installSteps(t, string(readme))

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	const version = "v0.0.0-00010101000000-000000000000"
	checkoutProxy(t, root, proxy, version)
	app := filepath.Join(tmp, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(goEnv(t, "GOMODCACHE"), "cache", "download"))+","+goEnv(t, "GOPROXY"),
		"GONOSUMDB=github.com/queuey/queuey",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOFLAGS=-modcacherw",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)

	var scripts, files int
	var lastOut string
	for i, s := range steps {
		switch s.lang {
		case "sh":
			scripts++
			t.Logf("$ %s", strings.ReplaceAll(strings.TrimSpace(s.body), "\n", "\n$ "))
			cmd := exec.Command("sh", "-e", "-c", s.body)
			cmd.Dir, cmd.Env = app, env
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			if err != nil {
				t.Fatalf("README Install step %d failed: %v", i+1, err)
			}
			lastOut = stdout.String()
		case "go":
			files++
			tempmod.WriteFile(t, filepath.Join(app, filepath.FromSlash(s.path)), []byte(s.body))
		case "text":
			if lastOut != s.body {
				t.Errorf("the script before README Install step %d printed %q, want %q", i+1, lastOut, s.body)
			}
		default:
			t.Fatalf("README Install step %d: a block of %q, which this test cannot follow", i+1, s.lang)
		}
	}
	if scripts < 2 || files < 2 {
		t.Fatalf("README Install has %d scripts and %d files, want at least 2 of each", scripts, files)
	}
	gomod, err := os.ReadFile(filepath.Join(app, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(gomod), "\ntool github.com/queuey/queuey/cmd/queuey-gen\n") {
		t.Errorf("go.mod after the README's steps has no tool line:\n%s", gomod)
	}
	if _, err := os.Stat(filepath.Join(app, "jobs", "queuey_gen.go")); err != nil {
		t.Errorf("go generate wrote no jobs/queuey_gen.go: %v", err)
	}
}

// checkoutProxy lays out a file proxy (GOPROXY=file://dir) serving the
// module at root as version, and as its latest.
func checkoutProxy(t *testing.T, root, dir, version string) {
	t.Helper()
	const path = "github.com/queuey/queuey"
	base := filepath.Join(dir, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	var zbuf bytes.Buffer
	if err := zip.CreateFromDir(&zbuf, module.Version{Path: path, Version: version}, root); err != nil {
		t.Fatalf("zip the checkout: %v", err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	tempmod.WriteFile(t, filepath.Join(base, "list"), nil)
	tempmod.WriteFile(t, filepath.Join(base, version+".info"), info)
	tempmod.WriteFile(t, filepath.Join(base, version+".mod"), gomod)
	tempmod.WriteFile(t, filepath.Join(base, version+".zip"), zbuf.Bytes())
	tempmod.WriteFile(t, filepath.Join(dir, filepath.FromSlash(path), "@latest"), info)
}

// goEnv returns the go command's value of key.
func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}
