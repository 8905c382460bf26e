package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuey/queuey/cmd/queuey/cli"
)

// TestPkgErrorsInWords: a --pkg the go command cannot load is refused
// (exit 1) in one line per pattern that names it, the directory it was
// resolved from, and what to do, without the go command's own framing
// ("-: ", "main module", "go get").
func TestPkgErrorsInWords(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 0)
	outside := t.TempDir()
	module, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, pkg string
		says     []string
	}{
		{outside, "./jobs/...", []string{"--pkg ./jobs/...: " + outside + " is in no Go module (no go.mod there or above)", "run queuey from your module's directory"}},
		{module, "./nosuch/...", []string{"--pkg ./nosuch/...: no such package, looked for from " + module + ": ", "no such file or directory"}},
		{module, "example.com/nosuch", []string{"--pkg example.com/nosuch: no such package, looked for from " + module + ": no required module provides package example.com/nosuch"}},
	} {
		env := memEnv(b)
		env.Dir = tc.dir
		for _, cmd := range []string{"queues", "dashboard"} {
			r := runCLI(t, ctxT(t), env, cmd, "--pkg", tc.pkg)
			for _, says := range tc.says {
				if r.code != cli.ExitFailure || !strings.HasPrefix(r.err, "queuey: ") || !strings.Contains(r.err, says) {
					t.Errorf("%s --pkg %s from %s: exit %d; want 1 and %q in stderr:\n%s", cmd, tc.pkg, tc.dir, r.code, says, r.err)
				}
			}
			for _, raw := range []string{"-: ", "main module", "go get", `\n`, `\t`} {
				if strings.Contains(r.err, raw) {
					t.Errorf("%s --pkg %s: stderr has the go command's %q:\n%s", cmd, tc.pkg, raw, r.err)
				}
			}
			if strings.Count(r.err, "\n") != 1 {
				t.Errorf("%s --pkg %s: stderr is not one line:\n%s", cmd, tc.pkg, r.err)
			}
		}
	}
}
