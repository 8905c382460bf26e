package cli_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/runtime"
)

// memoryWithDeadIDs returns a memory backend whose queue "q" holds a dead
// letter for each of ids, in order, each failed with reason and carrying
// headers.
func memoryWithDeadIDs(t *testing.T, reason string, headers map[string]string, ids ...string) (*runtime.MemoryBackend, runtime.QueueConfig) {
	t.Helper()
	b, q, p := memoryQueue(t)
	for i, id := range ids {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{To: "a@b.c", N: i}, runtime.WithID(id), runtime.WithHeaders(headers)); err != nil {
			t.Fatal(err)
		}
	}
	failAll(t, b, q, len(ids), reason)
	return b, q
}

// deadIDs returns the IDs of q's dead letters, oldest first.
func deadIDs(t *testing.T, b *runtime.MemoryBackend, q runtime.QueueConfig) []string {
	t.Helper()
	list, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{Limit: admin.MaxDeadLetterLimit})
	if err != nil {
		t.Fatal(err)
	}
	return list.IDs()
}

// TestIDWithCommaIsOneID: --id takes its value as one ID, commas included,
// so purge and redrive act on the letter "a,b" and leave "a" and "b".
func TestIDWithCommaIsOneID(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"purge", "redrive"} {
		t.Run(verb, func(t *testing.T) {
			b, q := memoryWithDeadIDs(t, "550 mailbox does not exist", nil, "a", "b", "a,b")
			r := runCLI(t, ctxT(t), memEnv(b), "dead", verb, "q", "--id", "a,b", "--yes")
			if r.code != cli.ExitOK {
				t.Fatalf("dead %s --id a,b: exit %d, stdout %q, stderr %q", verb, r.code, r.out, r.err)
			}
			if got, want := deadIDs(t, b, q), []string{"a", "b"}; !slices.Equal(got, want) {
				t.Errorf("dead letters after dead %s --id a,b: %q, want %q", verb, got, want)
			}
			if verb == "redrive" {
				if st, _ := b.QueueStats(ctxT(t), admin.Queue{Name: q.Name}); st[0].Ready != 1 {
					t.Errorf("after dead redrive --id a,b, %d jobs ready, want 1", st[0].Ready)
				}
			}
		})
	}
	// Repeating --id gives several IDs.
	b, q := memoryWithDeadIDs(t, "550 mailbox does not exist", nil, "a", "b", "a,b")
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "purge", "q", "--id", "a", "--id", "b", "--yes")
	if r.code != cli.ExitOK || !strings.Contains(r.out, "purged 2 dead letters of q") {
		t.Fatalf("dead purge --id a --id b: exit %d, stdout %q, stderr %q", r.code, r.out, r.err)
	}
	if got, want := deadIDs(t, b, q), []string{"a,b"}; !slices.Equal(got, want) {
		t.Errorf("dead letters after dead purge --id a --id b: %q, want %q", got, want)
	}
}

// TestUnmatchedIDFails: an ID that matches no dead letter makes purge and
// redrive exit 1, naming it, after acting on the IDs that do match.
func TestUnmatchedIDFails(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"purge", "redrive"} {
		t.Run(verb, func(t *testing.T) {
			b, q := memoryWithDeadIDs(t, "550 mailbox does not exist", nil, "a", "b")
			r := runCLI(t, ctxT(t), memEnv(b), "dead", verb, "q", "--id", "a", "--id", "a,b", "--yes")
			if r.code != cli.ExitFailure {
				t.Fatalf("dead %s with an unknown ID: exit %d, want 1; stdout %q, stderr %q", verb, r.code, r.out, r.err)
			}
			if want := `no dead letter has the ID "a,b"`; !strings.Contains(r.err, want) {
				t.Errorf("stderr %q, want it to say %q", r.err, want)
			}
			if !strings.Contains(r.out, "not found: a,b\n") {
				t.Errorf("stdout %q, want a line not found: a,b", r.out)
			}
			if got, want := deadIDs(t, b, q), []string{"b"}; !slices.Equal(got, want) {
				t.Errorf("dead letters after dead %s --id a --id a,b: %q, want %q", verb, got, want)
			}
			r = runCLI(t, ctxT(t), memEnv(b), "dead", verb, "q", "--id", "x", "--id", "y z", "--yes")
			if want := `no dead letter has any of the IDs "x", "y z"`; r.code != cli.ExitFailure || !strings.Contains(r.err, want) {
				t.Errorf("dead %s with two unknown IDs: exit %d, stderr %q; want 1 and %q", verb, r.code, r.err, want)
			}
		})
	}
}
