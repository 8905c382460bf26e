package cli

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type queueMigrateCmd struct {
	Queue            string        `arg:"" name:"queue" help:"The queue to migrate to the arguments its annotation gives."`
	Packages         []string      `name:"pkg" required:"" placeholder:"PACKAGE" help:"The Go packages whose //queuey:queue annotations declare the queue (e.g. ./...; repeat --pkg for more)."`
	DryRun           bool          `name:"dry-run" help:"Print the differences and the plan; change nothing."`
	PauseTimeout     time.Duration `name:"pause-timeout" default:"30s" help:"How long to wait for the queue's workers to let go once it is paused."`
	ProducersStopped bool          `name:"producers-stopped" help:"Say that no producer publishes to the queue meanwhile: needed to migrate a quorum queue, which the broker deletes whether or not it is empty."`
}

// migrateJSON is what queuey --json queues migrate prints.
type migrateJSON struct {
	Queue   string     `json:"queue"`
	DryRun  bool       `json:"dry_run"`
	Diffs   []diffJSON `json:"diffs"`
	Plan    []string   `json:"plan"`
	Resumed bool       `json:"resumed"`
	Moved   int        `json:"moved"`
	Dead    int        `json:"dead"`
}

// diffJSON is one argument that differs; an empty value means absent.
type diffJSON struct {
	Queue      string `json:"queue"`
	Arg        string `json:"arg"`
	Broker     string `json:"broker"`
	Annotation string `json:"annotation"`
}

func diffsJSON(ds []admin.ArgDiff) []diffJSON {
	out := make([]diffJSON, len(ds))
	for i, d := range ds {
		out[i] = diffJSON{Queue: d.Queue, Arg: d.Arg, Broker: d.Broker, Annotation: d.Config}
	}
	return out
}

func (c *queueMigrateCmd) Run(r *run) error {
	annotated, err := annotatedQueues(r.env.Dir, c.Packages)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(annotated, func(q runtime.QueueConfig) bool { return q.Name == c.Queue })
	if i < 0 {
		return fail(ExitFailure, "no //queuey:queue annotation in %s names queue %q: migrate takes its new arguments from it", strings.Join(c.Packages, " "), c.Queue)
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	m, ok := be.(admin.Migrator)
	if !ok {
		return fail(ExitFailure, "this backend cannot migrate queues")
	}
	opts := admin.MigrateOptions{DryRun: c.DryRun, PauseTimeout: c.PauseTimeout, ProducersStopped: c.ProducersStopped}
	if !r.g.JSON && !c.DryRun {
		opts.Progress = func(step string) { printf(r.env.Stderr, "%s\n", step) }
	}
	res, err := m.MigrateQueue(r.ctx, annotated[i], opts)
	switch {
	case errors.Is(err, admin.ErrNothingToMigrate):
		return fail(ExitFailure, "nothing to migrate: %s", plain(err))
	case errors.Is(err, admin.ErrCannotMigrate):
		return fail(ExitFailure, "%s", plain(err))
	case err != nil:
		return err
	}
	if r.g.JSON {
		return r.printJSON(migrateJSON{Queue: res.Queue, DryRun: c.DryRun, Diffs: diffsJSON(res.Diffs), Plan: res.Plan, Resumed: res.Resumed, Moved: res.Moved, Dead: res.Dead})
	}
	out := r.env.Stdout
	if len(res.Diffs) > 0 {
		printf(out, "%s differs from its annotation:\n", c.Queue)
		for _, d := range res.Diffs {
			printf(out, "  %s\n", d)
		}
	}
	if c.DryRun {
		printf(out, "plan (nothing changed):\n")
		for n, s := range res.Plan {
			printf(out, "  %d. %s\n", n+1, s)
		}
		return nil
	}
	resumed := ""
	if res.Resumed {
		resumed = " (finishing a migration cut short)"
	}
	printf(out, "migrated %s%s: %s moved back into it, %s into its dead-letter queue\n", c.Queue, resumed, plural(res.Moved, "job"), plural(res.Dead, "dead letter"))
	return nil
}

// drift compares the queue a asks for, when an annotation gives its
// configuration, with the broker's, into row. What cannot be compared is
// said in row.Missing.
func (r *run) drift(be Admin, a asked, row *queueJSON) error {
	row.Drift = []diffJSON{}
	if a.cfg == nil {
		return nil
	}
	dr, ok := be.(admin.DriftReader)
	if !ok {
		return nil
	}
	d, err := dr.QueueDrift(r.ctx, *a.cfg)
	switch {
	case errors.Is(err, admin.ErrCannotList):
		row.Missing = append(row.Missing, "arguments not compared with the annotation: "+cannotList(err))
		return nil
	case err != nil:
		return err
	}
	row.Drift, row.Migrating = diffsJSON(d.Diffs), d.Migrating
	return nil
}

// driftNote is what the queues table says of q's differences from its
// annotation, "" when there are none.
func driftNote(q queueJSON) string {
	switch {
	case q.Migrating:
		return "being migrated, or a migration was cut short: queuey queues migrate " + q.Queue + " --pkg ... finishes it"
	case len(q.Drift) == 0:
		return ""
	}
	parts := make([]string, len(q.Drift))
	for i, d := range q.Drift {
		parts[i] = admin.ArgDiff{Queue: d.Queue, Arg: d.Arg, Broker: d.Broker, Config: d.Annotation}.String()
	}
	return "differs from its annotation (" + strings.Join(parts, "; ") + "): producers and workers of the annotation are refused until queuey queues migrate " + q.Queue + " --pkg ..."
}
