package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/annotations"
	"github.com/queuey/queuey/internal/adminq"
	"github.com/queuey/queuey/runtime"
)

type queuesCmd struct {
	List   queuesListCmd `cmd:"" default:"withargs" help:"Show every queue (the default of queuey queues)."`
	Pause  pauseCmd      `cmd:"" help:"Pause a queue: every worker stops taking its jobs within a second (running jobs finish); enqueues go on."`
	Resume resumeCmd     `cmd:"" help:"Resume a paused queue: its workers take its jobs again within a second."`
}

type queuesListCmd struct {
	Packages []string `arg:"" optional:"" name:"package" help:"Go packages whose //queuey:queue annotations name the queues (e.g. ./jobs/...). Without them, every queue the broker knows."`
}

// queueRow is one line of the queues command: a queue's stats, or why it
// has none.
type queueRow struct {
	admin.QueueStats
	// Kind is the job type, when the queue came from an annotation.
	Kind string `json:"kind,omitempty"`
	// Absent is set for an annotated queue not (yet) on the broker.
	Absent bool `json:"absent,omitempty"`
}

func (c *queuesListCmd) Run(r *run) error {
	var configs []runtime.QueueConfig
	if len(c.Packages) > 0 {
		var err error
		if configs, err = annotatedQueues(r.env.Dir, c.Packages); err != nil {
			return err
		}
		if len(configs) == 0 {
			return fmt.Errorf("no //queuey:queue annotations in %s", strings.Join(c.Packages, " "))
		}
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	var notes []string
	if configs == nil {
		names, err := be.Queues(r.ctx)
		if err != nil {
			if !errors.Is(err, admin.ErrCannotList) {
				return err
			}
			if len(names) == 0 {
				return fmt.Errorf("%w; name the packages that declare the queues (queuey queues ./...) to see them anyway", err)
			}
			notes = append(notes, err.Error())
		}
		for _, n := range names {
			configs = append(configs, runtime.QueueConfig{Name: n})
		}
	}
	rows := make([]queueRow, 0, len(configs))
	for _, cfg := range configs {
		st, err := be.QueueStats(r.ctx, adminq.Of(cfg))
		switch {
		case errors.Is(err, runtime.ErrUnknownQueue):
			rows = append(rows, queueRow{QueueStats: admin.QueueStats{Queue: cfg.Name, Holds: []admin.HoldStats{}}, Kind: cfg.Kind, Absent: true})
		case err != nil:
			return err
		default:
			rows = append(rows, queueRow{QueueStats: st[0], Kind: cfg.Kind})
		}
	}
	if r.g.JSON {
		return r.printJSON(rows)
	}
	r.queuesTable(rows, notes)
	return nil
}

func (r *run) queuesTable(rows []queueRow, notes []string) {
	if len(rows) == 0 {
		fmt.Fprintln(r.env.Stdout, "no queues")
	}
	cells := make([][]string, 0, len(rows))
	var byQueue []queueNote
	now := time.Now()
	for _, q := range rows {
		if q.Absent {
			name := q.Queue
			if q.Paused {
				name += " (paused)"
				byQueue = noteQueues(byQueue, q.Queue, "paused: workers take none of its jobs until queuey queues resume")
			}
			cells = append(cells, []string{name, orDash(q.Kind), "-", "-", "-", "-", "-", "-"})
			byQueue = noteQueues(byQueue, q.Queue, "not on the broker (no worker or producer has declared it yet)")
			continue
		}
		next := "-"
		var first time.Time
		for _, h := range q.Holds {
			if first.IsZero() || h.NextReleaseBy.Before(first) {
				first = h.NextReleaseBy
			}
		}
		if !first.IsZero() {
			next = "by " + first.Sub(now).Round(time.Second).String()
		}
		name := q.Queue
		if q.Paused {
			name += " (paused)"
			byQueue = noteQueues(byQueue, q.Queue, "paused: workers take none of its jobs until queuey queues resume")
		}
		cells = append(cells, []string{name, orDash(q.Kind), count(q.Ready), count(q.Unacked), count(q.Waiting), next, count(q.Dead), count(q.Consumers)})
		for _, m := range q.Missing {
			byQueue = noteQueues(byQueue, q.Queue, m)
		}
	}
	table(r.env.Stdout, []string{"QUEUE", "KIND", "READY", "IN FLIGHT", "WAITING", "NEXT RELEASE", "DEAD", "CONSUMERS"}, cells)
	for _, n := range byQueue {
		notes = append(notes, strings.Join(n.queues, ", ")+": "+n.note)
	}
	if len(notes) > 0 {
		fmt.Fprintln(r.env.Stdout)
		for _, n := range notes {
			printf(r.env.Stdout, "note: %s\n", n)
		}
	}
}

// noteQueues adds note about queue to notes, where the same note about
// other queues names them all once.
func noteQueues(notes []queueNote, queue, note string) []queueNote {
	for i := range notes {
		if notes[i].note == note {
			notes[i].queues = append(notes[i].queues, queue)
			return notes
		}
	}
	return append(notes, queueNote{queues: []string{queue}, note: note})
}

type queueNote struct {
	queues []string
	note   string
}

// annotatedQueues loads the packages of patterns (syntax only: nothing is
// compiled) and returns the queues their //queuey:queue annotations
// declare.
func annotatedQueues(dir string, patterns []string) ([]runtime.QueueConfig, error) {
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax, Dir: dir}, patterns...)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", strings.Join(patterns, " "), err)
	}
	var out []runtime.QueueConfig
	var errs []error
	for _, p := range pkgs {
		for _, e := range p.Errors {
			errs = append(errs, fmt.Errorf("package %s: %v", p.PkgPath, e))
		}
		jobs, err := annotations.ParseFiles(p.Fset, p.Name, p.Syntax)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, j := range jobs {
			out = append(out, j.Queue)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
