package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/runtime"
)

// checkDuplicateIDs runs dead show and dead redrive on queue q, whose dead
// letters carry the IDs A, A, B, B and C (as an ID is a label, which
// several jobs may carry), through run, and asserts that show shows every
// letter with an ID, and redrive counts what it moved per ID and names the
// ID that matched nothing. left returns the IDs of the dead letters left.
func checkDuplicateIDs(t *testing.T, run func(args ...string) result, q string, left func() []string) {
	t.Helper()
	r := run("dead", "show", q, "A")
	if r.code != cli.ExitOK || !strings.HasPrefix(r.out, `2 dead letters of `+q+` carry the ID "A"`) ||
		!strings.Contains(r.out, "--- dead letter 1 of 2 with this ID ---") || !strings.Contains(r.out, "--- dead letter 2 of 2 with this ID ---") ||
		strings.Count(r.out, "\nid:") != 2 {
		t.Errorf("dead show %s A: exit %d; want both letters, and how many:\n%s%s", q, r.code, r.out, r.err)
	}
	r = run("--json", "dead", "show", q, "A")
	var shown struct {
		Queue, ID string
		Letters   []admin.DeadLetterInfo
	}
	if err := json.Unmarshal([]byte(r.out), &shown); r.code != 0 || err != nil || shown.Queue != q || shown.ID != "A" || len(shown.Letters) != 2 ||
		shown.Letters[0].ID != "A" || shown.Letters[1].ID != "A" || string(shown.Letters[0].Payload) == string(shown.Letters[1].Payload) {
		t.Errorf("dead show --json %s A: exit %d, %v, %+v; want the two letters, each its own payload\n%s", q, r.code, err, shown, r.err)
	}
	r = run("dead", "show", q, "C")
	if r.code != cli.ExitOK || !strings.HasPrefix(r.out, "id:") || strings.Contains(r.out, "carry the ID") {
		t.Errorf("dead show %s C: exit %d; want the one letter as it is:\n%s%s", q, r.code, r.out, r.err)
	}

	r = run("dead", "redrive", q, "--id", "A", "--id", "B", "--id", "nosuch", "--yes")
	if r.code != cli.ExitFailure || firstLine(r.out) != `moved 4 dead letters of `+q+` back onto `+q+`: 2 with ID "A", 2 with ID "B"` ||
		!strings.Contains(r.out, "\nnot found: nosuch\n") || !strings.Contains(r.err, `no dead letter has the ID "nosuch"`) {
		t.Errorf("dead redrive --id A --id B --id nosuch: exit %d; want 1, the count per ID, and nosuch named:\n%s%s", r.code, r.out, r.err)
	}
	if got := left(); !slices.Equal(got, []string{"C"}) {
		t.Errorf("dead letters left: %q, want C", got)
	}
	r = run("--json", "dead", "redrive", q, "--id", "C", "--id", "zz", "--yes")
	var moved struct {
		MovedByID map[string]int `json:"moved_by_id"`
		NotFound  []string       `json:"not_found"`
	}
	if err := json.Unmarshal([]byte(r.out), &moved); r.code != cli.ExitFailure || err != nil || moved.MovedByID["C"] != 1 || moved.MovedByID["zz"] != 0 ||
		len(moved.MovedByID) != 2 || !slices.Equal(moved.NotFound, []string{"zz"}) {
		t.Errorf("dead redrive --json --id C --id zz: exit %d, %v, %+v; want exit 1, moved_by_id {C: 1, zz: 0}, zz not found\n%s%s", r.code, err, moved, r.out, r.err)
	}
}

// TestDuplicateIDs: on the memory backend.
func TestDuplicateIDs(t *testing.T) {
	t.Parallel()
	b, q := memoryWithDeadIDs(t, "550 mailbox does not exist", nil, "A", "A", "B", "B", "C")
	checkDuplicateIDs(t, func(args ...string) result { return runCLI(t, ctxT(t), memEnv(b), args...) }, q.Name,
		func() []string { return deadIDs(t, b, q) })
}

// TestBrokerDuplicateIDs: on the broker.
func TestBrokerDuplicateIDs(t *testing.T) {
	t.Parallel()
	bq := newBrokerQueue(t)
	for i, id := range []string{"A", "A", "B", "B", "C"} {
		if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: i}, runtime.WithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	stop := bq.work(func(ctx context.Context, j job) error { return errors.New("550 mailbox does not exist") })
	bq.dead(5)
	stop()
	checkDuplicateIDs(t, func(args ...string) result { return bq.cli(ctxT(t), cli.Env{}, args...) }, bq.q.Name,
		func() []string { return ids(bq.ls()) })
}
