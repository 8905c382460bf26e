package cli_test

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/cmd/queuey/cli"
)

// TestPauseResume: pause and resume change the backend's state, the queues
// table marks a paused queue and says how to resume it, --json carries it,
// and a queue that does not exist is an error that names it.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	b, q, _ := memoryWithDead(t, 1)
	env := memEnv(b)

	res := runCLI(t, ctxT(t), env, "queues", "pause", q.Name)
	if res.code != cli.ExitOK || !strings.Contains(res.out, "paused "+q.Name) {
		t.Fatalf("queues pause: exit %d, stdout %q, stderr %q", res.code, res.out, res.err)
	}
	if paused, err := b.Paused(ctxT(t), q.Name); err != nil || !paused {
		t.Fatalf("after queues pause, Paused = %v, %v; want true", paused, err)
	}
	res = runCLI(t, ctxT(t), env, "queues")
	if !strings.Contains(res.out, q.Name+"      -     yes") || !strings.Contains(res.out, "note: "+q.Name+": paused: workers take none of its jobs until queuey queues resume") {
		t.Errorf("queues while paused:\n%s", res.out)
	}
	res = runCLI(t, ctxT(t), env, "--json", "queues")
	if !strings.Contains(res.out, `"paused": true`) {
		t.Errorf("queues --json while paused:\n%s", res.out)
	}

	res = runCLI(t, ctxT(t), env, "queues", "resume", q.Name)
	if res.code != cli.ExitOK || !strings.Contains(res.out, "resumed "+q.Name) {
		t.Fatalf("queues resume: exit %d, stdout %q, stderr %q", res.code, res.out, res.err)
	}
	if paused, err := b.Paused(ctxT(t), q.Name); err != nil || paused {
		t.Fatalf("after queues resume, Paused = %v, %v; want false", paused, err)
	}
	if res = runCLI(t, ctxT(t), env, "queues"); strings.Contains(res.out, "paused") {
		t.Errorf("queues after resume still says paused:\n%s", res.out)
	}

	res = runCLI(t, ctxT(t), env, "queues", "pause", "no.such.queue")
	if res.code != cli.ExitFailure || !strings.Contains(res.err, `"no.such.queue"`) || !strings.Contains(res.err, "does not exist on the broker") || strings.Contains(res.err, "runtime.") {
		t.Errorf("queues pause of a missing queue: exit %d, stderr %q; want 1 and an error naming it", res.code, res.err)
	}
	if res = runCLI(t, ctxT(t), env, "queues", "pause"); res.code != cli.ExitUsage {
		t.Errorf("queues pause without a queue: exit %d, want %d", res.code, cli.ExitUsage)
	}
}
