package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type queuesCmd struct {
	List    queuesListCmd   `cmd:"" default:"withargs" help:"Show queues (the default of queuey queues): every queue, or those named."`
	Pause   pauseCmd        `cmd:"" help:"Pause a queue: every worker stops taking its jobs within a second (running jobs finish); enqueues go on."`
	Resume  resumeCmd       `cmd:"" help:"Resume a paused queue: its workers take its jobs again within a second."`
	Purge   queuePurgeCmd   `cmd:"" help:"Delete the ready jobs of a queue (not those in flight, waiting or dead). Asks for confirmation."`
	Delete  queueDeleteCmd  `cmd:"" help:"Delete a queue and its ready jobs; with --with-waits also its dead letters, hold queues and pause marker. Asks for confirmation."`
	Migrate queueMigrateCmd `cmd:"" help:"Move a queue's jobs into the queue declared anew with the arguments its annotation gives (max_priority, queue_type), losing none: pauses it, moves its jobs through a temporary queue and back, resumes it."`
}

type queuesListCmd struct {
	Names    []string `arg:"" optional:"" name:"name" help:"A queue's name, or a prefix ending in * (newcomer.*). Without any, every queue. A name or prefix that matches no queue is an error. (A queue named like a subcommand: queuey queues list NAME.)"`
	Packages []string `name:"pkg" placeholder:"PACKAGE" help:"Also read the queues, their job kinds and retry schedules from the //queuey:queue annotations of these Go packages (e.g. ./jobs/...; repeat --pkg for more). Then only their queues are shown, those no worker has declared yet included."`
}

// queueJSON is one queue as queuey --json queues prints it. A count that
// cannot be seen is null.
type queueJSON struct {
	Queue string `json:"queue"`
	// Kind is the job kind, when an annotation (--pkg) gives it.
	Kind *string `json:"kind"`
	// Exists is false for an annotated queue not (yet) on the broker, and
	// for one whose dead letters outlived it.
	Exists        bool       `json:"exists"`
	Paused        bool       `json:"paused"`
	Ready         *int       `json:"ready"`
	Unacked       *int       `json:"unacked"`
	Waiting       *int       `json:"waiting"`
	NextReleaseBy *time.Time `json:"next_release_by"`
	Dead          *int       `json:"dead"`
	Consumers     *int       `json:"consumers"`
	Holds         []holdJSON `json:"holds"`
	// Drift is every argument of the queue (and its dead-letter queue)
	// whose value on the broker differs from its annotation (--pkg only).
	Drift []diffJSON `json:"drift"`
	// Migrating says a migration of the queue is under way, or was cut
	// short (--pkg only).
	Migrating bool `json:"migrating"`
	// Missing says, in one sentence each, what could not be seen and why.
	Missing []string `json:"missing"`
}

// holdJSON is one hold queue of a queue's waits.
type holdJSON struct {
	Name          string     `json:"name"`
	Kind          string     `json:"kind"`
	DelayMS       int64      `json:"delay_ms"`
	Jobs          int        `json:"jobs"`
	NextReleaseBy *time.Time `json:"next_release_by"`
}

// queuesJSON is what queuey --json queues prints.
type queuesJSON struct {
	Queues []queueJSON `json:"queues"`
	// Notes say what could not be seen of the broker as a whole.
	Notes []string `json:"notes"`
	// Ladders are the delay ladders, with their unrouted waits.
	Ladders []admin.LadderStats `json:"ladders"`
	// Limits are the global limits of the queues shown that have any.
	Limits []limitJSON `json:"limits"`
}

// known is n, or nil when it is admin.NotSeen.
func known(n int) *int {
	if n == admin.NotSeen {
		return nil
	}
	return &n
}

// utc is t in UTC, or nil when it is zero.
func utc(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// asked is a queue to show: its configuration, and whether it was named
// exactly.
type asked struct {
	q     admin.Queue
	kind  string
	named bool
	cfg   *runtime.QueueConfig // from an annotation, to compare with the broker
}

func (c *queuesListCmd) Run(r *run) error {
	var annotated []runtime.QueueConfig
	if len(c.Packages) > 0 {
		var err error
		if annotated, err = annotatedQueues(r.env.Dir, c.Packages); err != nil {
			return err
		}
		if len(annotated) == 0 {
			return fail(ExitFailure, "no //queuey:queue annotations in %s", strings.Join(c.Packages, " "))
		}
	}
	var exact, prefixes []string
	for _, n := range c.Names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			prefixes = append(prefixes, p)
		} else {
			exact = append(exact, n)
		}
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	var notes []string
	var queues []asked
	switch {
	case annotated != nil:
		for _, cfg := range annotated {
			queues = append(queues, asked{q: admin.QueueOf(cfg), kind: cfg.Kind, named: slices.Contains(exact, cfg.Name), cfg: &cfg})
		}
	case len(prefixes) > 0 || len(exact) == 0:
		names, err := be.Queues(r.ctx)
		if err != nil {
			if !errors.Is(err, admin.ErrCannotList) {
				return err
			}
			if len(names) == 0 {
				return fail(ExitManagement, "cannot list the broker's queues: %s; name them (queuey queues NAME ...) or the packages that declare them (--pkg ./...) to see them anyway", cannotList(err))
			}
			notes = append(notes, "only the queues this command declared are listed: "+cannotList(err))
		}
		for _, n := range names {
			queues = append(queues, asked{q: admin.Queue{Name: n}})
		}
	}
	if annotated == nil {
		// Exact names are looked at whether or not a listing has them.
		for _, n := range exact {
			if i := slices.IndexFunc(queues, func(a asked) bool { return a.q.Name == n }); i >= 0 {
				queues[i].named = true
			} else {
				queues = append(queues, asked{q: admin.Queue{Name: n}, named: true})
			}
		}
	}
	if len(c.Names) > 0 {
		queues = slices.DeleteFunc(queues, func(a asked) bool {
			return !a.named && !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(a.q.Name, p) })
		})
	}
	rows := make([]queueJSON, 0, len(queues))
	var unknown []string
	gone := 0
	for _, a := range queues {
		row, err := r.queueRow(be, a)
		if err != nil {
			return err
		}
		if row == nil {
			// A queue asked for by name is missing; one that only the
			// listing named was deleted since, and is left out.
			if a.named {
				unknown = append(unknown, a.q.Name)
			} else {
				gone++
			}
			continue
		}
		rows = append(rows, *row)
	}
	for _, p := range prefixes {
		if !slices.ContainsFunc(rows, func(q queueJSON) bool { return strings.HasPrefix(q.Queue, p) }) {
			unknown = append(unknown, p+"*")
		}
	}
	if gone > 0 {
		verb := "were"
		if gone == 1 {
			verb = "was"
		}
		notes = append(notes, fmt.Sprintf("%s %s deleted while the list was read, and left out.", plural(gone, "queue"), verb))
	}
	ladders, lnotes, err := r.queueLadders(be)
	if err != nil {
		return err
	}
	limits, limNotes, err := r.queueLimits(be, annotated, rows)
	if err != nil {
		return err
	}
	lnotes = append(lnotes, limNotes...)
	if r.g.JSON {
		if notes == nil {
			notes = []string{}
		}
		if err := r.printJSON(queuesJSON{Queues: rows, Notes: append(notes, lnotes...), Ladders: ladders, Limits: limits}); err != nil {
			return err
		}
	} else {
		r.queuesTable(rows, limits, append(notes, lnotes...))
	}
	if len(unknown) > 0 {
		quoted := make([]string, len(unknown))
		for i, n := range unknown {
			quoted[i] = strconv.Quote(n)
		}
		return fail(ExitFailure, "no queue on the broker matches %s", strings.Join(quoted, ", "))
	}
	return nil
}

// queueRow counts the queue a asks for; nil when it does not exist and
// nothing else knows it (an annotation, or its name in a listing).
func (r *run) queueRow(be Admin, a asked) (*queueJSON, error) {
	row := queueJSON{Queue: a.q.Name, Holds: []holdJSON{}, Missing: []string{}, Drift: []diffJSON{}}
	if a.kind != "" {
		row.Kind = &a.kind
	}
	st, err := be.QueueStats(r.ctx, a.q)
	switch {
	case errors.Is(err, runtime.ErrUnknownQueue):
		if a.kind == "" {
			return nil, nil
		}
		row.Missing = append(row.Missing, "not on the broker (no worker or producer has declared it yet)")
		if paused, err := be.Paused(r.ctx, a.q.Name); err == nil {
			row.Paused = paused
		}
		return &row, nil
	case err != nil:
		return nil, err
	}
	s := st[0]
	row.Exists = !slices.ContainsFunc(s.Missing, func(m string) bool { return strings.Contains(m, "does not exist") })
	row.Paused = s.Paused
	row.Ready, row.Unacked, row.Dead, row.Consumers = known(s.Ready), known(s.Unacked), known(s.Dead), known(s.Consumers)
	// A backend that cannot see jobs in flight (RabbitMQ without its
	// management API) cannot list the hold queues of deferrals either, and
	// the delayed-message plugin's and the ladder's waits cannot be
	// counted per queue: then the sum of the holds found is not the count
	// of waits.
	if s.Unacked != admin.NotSeen && !a.q.PluginDelay && !a.q.LadderDelay {
		row.Waiting = known(s.Waiting)
	}
	var first time.Time
	for _, h := range s.Holds {
		row.Holds = append(row.Holds, holdJSON{Name: h.Name, Kind: string(h.Kind), DelayMS: h.Delay.Milliseconds(), Jobs: h.Jobs, NextReleaseBy: utc(h.NextReleaseBy)})
		if !h.NextReleaseBy.IsZero() && (first.IsZero() || h.NextReleaseBy.Before(first)) {
			first = h.NextReleaseBy
		}
	}
	row.NextReleaseBy = utc(first)
	row.Missing = append(row.Missing, plainAll(s.Missing)...)
	if err := r.drift(be, a, &row); err != nil {
		return nil, err
	}
	return &row, nil
}

// plainAll is ms with the sentinels' "queuey: " taken out, and what the
// backend calls jobs in flight named by the column that counts them.
func plainAll(ms []string) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		m = strings.ReplaceAll(m, "queuey: cannot list: ", "")
		if rest, ok := strings.CutPrefix(m, "in flight: "); ok {
			m = "unacked: " + rest
		}
		out[i] = m
	}
	return out
}

// cannotList is what err, wrapping admin.ErrCannotList, says could not be
// seen.
func cannotList(err error) string {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, admin.ErrCannotList.Error()+": "); ok {
		return rest
	}
	return plain(err)
}

// queuesHeaders are the columns of the queues table: the JSON fields, in
// capitals.
var queuesHeaders = []string{"QUEUE", "KIND", "PAUSED", "READY", "UNACKED", "WAITING", "NEXT_RELEASE_BY", "DEAD", "CONSUMERS"}

func (r *run) queuesTable(rows []queueJSON, limits []limitJSON, notes []string) {
	if len(rows) == 0 {
		fmt.Fprintln(r.env.Stdout, "no queues")
		for _, n := range notes {
			printf(r.env.Stdout, "note: %s\n", n)
		}
		return
	}
	cells := make([][]string, 0, len(rows))
	var byQueue []queueNote
	now := time.Now()
	for _, q := range rows {
		next := "-"
		if q.NextReleaseBy != nil {
			next = "in " + q.NextReleaseBy.Sub(now).Round(time.Second).String()
		}
		paused := "no"
		if q.Paused {
			paused = "yes"
			byQueue = noteQueues(byQueue, q.Queue, "paused: workers take none of its jobs until queuey queues resume")
		}
		kind := "-"
		if q.Kind != nil {
			kind = *q.Kind
		}
		n := count
		if !q.Exists {
			// Not on the broker: nothing to count, rather than unknown.
			n = func(c *int) string {
				if c == nil {
					return "-"
				}
				return count(c)
			}
		}
		cells = append(cells, []string{q.Queue, kind, paused, n(q.Ready), n(q.Unacked), n(q.Waiting), next, n(q.Dead), n(q.Consumers)})
		for _, m := range q.Missing {
			byQueue = noteQueues(byQueue, q.Queue, m)
		}
		if n := driftNote(q); n != "" {
			byQueue = noteQueues(byQueue, q.Queue, n)
		}
	}
	table(r.env.Stdout, queuesHeaders, cells)
	r.limitsTable(limits)
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
