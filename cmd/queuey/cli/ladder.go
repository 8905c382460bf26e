package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
)

// ladderCmd is what operators do with the delay ladders (delay=ladder):
// count them, and list and put back the waits whose queue was deleted
// while they waited.
type ladderCmd struct {
	Ls       ladderLsCmd       `cmd:"" help:"Show the delay ladders: the waits on their levels, and their unrouted waits (whose queue was deleted while they waited)."`
	Unrouted ladderUnroutedCmd `cmd:"" help:"List the unrouted waits, by the queue each was for, without removing them."`
	Redrive  ladderRedriveCmd  `cmd:"" help:"Put unrouted waits back on their queues, those that exist now; the others stay. Asks for confirmation."`
}

// ladderAdmin is be's admin.LadderAdmin, or an error saying the backend has
// no ladders to show.
func ladderAdmin(be Admin) (admin.LadderAdmin, error) {
	la, ok := be.(admin.LadderAdmin)
	if !ok {
		return nil, fail(ExitFailure, "this backend has no delay ladders")
	}
	return la, nil
}

// ladders reads the ladders, keeping what an unreachable management API
// left visible and saying what it hid in notes.
func (r *run) ladders(la admin.LadderAdmin) ([]admin.LadderStats, []string, error) {
	ls, err := la.Ladders(r.ctx)
	if err != nil && !errors.Is(err, admin.ErrCannotList) {
		return nil, nil, err
	}
	var notes []string
	if err != nil {
		notes = append(notes, cannotList(err))
	}
	if ls == nil {
		ls = []admin.LadderStats{}
	}
	return ls, notes, nil
}

type ladderLsCmd struct{}

// laddersJSON is what queuey --json ladder ls prints.
type laddersJSON struct {
	Ladders []admin.LadderStats `json:"ladders"`
	Notes   []string            `json:"notes"`
}

func (c *ladderLsCmd) Run(r *run) error {
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	la, err := ladderAdmin(be)
	if err != nil {
		return err
	}
	ls, notes, err := r.ladders(la)
	if err != nil {
		return err
	}
	if r.g.JSON {
		return r.printJSON(laddersJSON{Ladders: ls, Notes: nonNil(notes)})
	}
	if len(ls) == 0 {
		fmt.Fprintln(r.env.Stdout, "no delay ladders")
	} else {
		ladderTable(r, ls)
	}
	for _, n := range notes {
		printf(r.env.Stdout, "note: %s\n", n)
	}
	return nil
}

// ladderTable prints ls as a table, and how to see and put back their
// unrouted waits when there are any.
func ladderTable(r *run, ls []admin.LadderStats) {
	rows := make([][]string, 0, len(ls))
	unrouted := 0
	for _, l := range ls {
		rows = append(rows, []string{l.Name, l.QueueType, l.Granularity.String(), strconv.Itoa(l.Levels), strconv.Itoa(l.Waiting), strconv.Itoa(l.Unrouted)})
		unrouted += l.Unrouted
	}
	table(r.env.Stdout, []string{"LADDER", "TYPE", "GRANULARITY", "LEVELS", "WAITING", "UNROUTED"}, rows)
	if unrouted > 0 {
		printf(r.env.Stdout, "\n%s whose queue was deleted while they waited: queuey ladder unrouted lists them by queue, queuey ladder redrive puts them back\n", plural(unrouted, "unrouted wait"))
	}
}

// ladderFlag names the ladders a command reads.
type ladderFlag struct {
	Ladders []string `name:"ladder" placeholder:"LADDER" help:"Read only this ladder's unrouted waits (as ladder ls names it, e.g. queuey.ladder.quorum.1000ms; repeat for more). Without it, every ladder's: each costs reading its whole unrouted queue."`
}

// check fails for a --ladder that names no ladder on the broker.
func (f ladderFlag) check(r *run, la admin.LadderAdmin) error {
	if len(f.Ladders) == 0 {
		return nil
	}
	ls, _, err := r.ladders(la)
	if err != nil {
		return err
	}
	var unknown []string
	for _, n := range f.Ladders {
		if !slices.ContainsFunc(ls, func(l admin.LadderStats) bool { return l.Name == n }) {
			unknown = append(unknown, strconv.Quote(n))
		}
	}
	if len(unknown) > 0 {
		return fail(ExitFailure, "no delay ladder %s on the broker (queuey ladder ls lists them)", strings.Join(unknown, ", "))
	}
	return nil
}

type ladderUnroutedCmd struct {
	Names []string `arg:"" optional:"" name:"queue" help:"The queue the waits were for, or a prefix ending in * (orders.*). Without any, every unrouted wait. A name or prefix that matches no unrouted wait is an error."`
	ladderFlag
}

// unroutedJSON is what queuey --json ladder unrouted prints.
type unroutedJSON struct {
	Waits []admin.UnroutedWait `json:"waits"`
	Notes []string             `json:"notes"`
}

func (c *ladderUnroutedCmd) Run(r *run) error {
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	la, err := ladderAdmin(be)
	if err != nil {
		return err
	}
	if err := c.check(r, la); err != nil {
		return err
	}
	sel := admin.UnroutedSelector{Queues: c.Names, Ladders: c.Ladders}
	ws, err := la.UnroutedWaits(r.ctx, sel)
	var notes []string
	if err != nil {
		if !errors.Is(err, admin.ErrCannotList) {
			return err
		}
		notes = append(notes, cannotList(err))
	}
	if r.g.JSON {
		if err := r.printJSON(unroutedJSON{Waits: nonNil(ws), Notes: nonNil(notes)}); err != nil {
			return err
		}
	} else {
		printUnrouted(r, ws)
		for _, n := range notes {
			printf(r.env.Stdout, "note: %s\n", n)
		}
	}
	return unmatchedError("ladder unrouted", sel, ws)
}

// printUnrouted prints unrouted waits as a table, and how many are for a
// queue that exists (which a re-drive puts back) and for one that does not.
func printUnrouted(r *run, ws []admin.UnroutedWait) {
	if len(ws) == 0 {
		fmt.Fprintln(r.env.Stdout, "no unrouted waits")
		return
	}
	now := time.Now()
	rows := make([][]string, 0, len(ws))
	exist := 0
	for _, w := range ws {
		exists := "no"
		if w.QueueExists {
			exists = "yes"
			exist++
		}
		age := "-"
		if !w.UnroutedAt.IsZero() {
			age = now.Sub(w.UnroutedAt).Round(time.Second).String()
		}
		kind := w.Kind
		if w.Poison {
			kind = "(poison)"
		}
		rows = append(rows, []string{w.Queue, exists, w.Delay.String(), age, w.ID, orDash(kind), w.Ladder})
	}
	table(r.env.Stdout, []string{"QUEUE", "QUEUE_EXISTS", "DELAY", "UNROUTED_FOR", "ID", "KIND", "LADDER"}, rows)
	printf(r.env.Stdout, "\n%s: %d for a queue that exists (queuey ladder redrive puts them back), %d for one that does not\n",
		plural(len(ws), "unrouted wait"), exist, len(ws)-exist)
}

// unmatchedError is the error of cmd when a name or prefix of sel matches
// none of ws.
func unmatchedError(cmd string, sel admin.UnroutedSelector, ws []admin.UnroutedWait) error {
	seen := map[string]bool{}
	for _, w := range ws {
		seen[w.Queue] = true
	}
	return unmatched(cmd, sel.Unmatched(seen))
}

func unmatched(cmd string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return fail(ExitFailure, "%s: no unrouted wait is for %s", cmd, strings.Join(quoted, ", "))
}

type ladderRedriveCmd struct {
	Names  []string `arg:"" optional:"" name:"queue" help:"The queue whose unrouted waits to put back, or a prefix ending in * (orders.*). A name or prefix that matches no unrouted wait is an error."`
	All    bool     `name:"all" help:"Every unrouted wait, whatever its queue."`
	DryRun bool     `name:"dry-run" help:"Say what would be put back and what would stay; change nothing."`
	Yes    bool     `name:"yes" short:"y" help:"Do not ask for confirmation."`
	ladderFlag
}

// ladderRedriveJSON is what queuey --json ladder redrive prints. With
// --dry-run, Moved are the waits that would be put back and Stayed those
// that would stay.
type ladderRedriveJSON struct {
	DryRun bool                 `json:"dry_run"`
	Moved  []admin.UnroutedWait `json:"moved"`
	Stayed []admin.UnroutedWait `json:"stayed"`
	// MissingQueues are the queues of Stayed, each once: they do not
	// exist.
	MissingQueues []string `json:"missing_queues"`
	Unmatched     []string `json:"unmatched"`
	Notes         []string `json:"notes"`
}

func (c *ladderRedriveCmd) Run(r *run) error {
	switch {
	case c.All && len(c.Names) > 0:
		return usagef("ladder redrive: give queues or --all, not both")
	case !c.All && len(c.Names) == 0:
		return usagef("ladder redrive: say which waits: the queues they were for (or a prefix ending in *), or --all")
	}
	sel := admin.UnroutedSelector{Queues: c.Names, Ladders: c.Ladders}
	if !c.DryRun {
		q := "Put every unrouted wait back on its queue (those whose queue exists)?"
		if !c.All {
			q = sprintf("Put the unrouted waits for %s back on their queues (those that exist)?", strings.Join(c.Names, ", "))
		}
		if err := r.confirm(c.Yes, "re-drive unrouted waits", q); err != nil {
			return err
		}
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	la, err := ladderAdmin(be)
	if err != nil {
		return err
	}
	if err := c.check(r, la); err != nil {
		return err
	}
	var res admin.UnroutedRedriveResult
	if c.DryRun {
		ws, werr := la.UnroutedWaits(r.ctx, sel)
		err = werr
		res.Moved, res.Stayed = []admin.UnroutedWait{}, []admin.UnroutedWait{}
		for _, w := range ws {
			if w.QueueExists {
				res.Moved = append(res.Moved, w)
			} else {
				res.Stayed = append(res.Stayed, w)
			}
		}
		seen := map[string]bool{}
		for _, w := range ws {
			seen[w.Queue] = true
		}
		res.Unmatched = sel.Unmatched(seen)
	} else {
		p := &progress{w: r.env.Stderr, on: r.env.StderrTerminal}
		res, err = la.RedriveUnrouted(r.ctx, sel, func(pr admin.UnroutedProgress) {
			p.draw("re-driving unrouted waits: %d moved, %d stay, of %d", pr.Moved, pr.Stayed, pr.Total)
		})
		p.done()
	}
	var notes []string
	if errors.Is(err, admin.ErrCannotList) {
		notes = append(notes, cannotList(err))
		err = nil
	}
	if err != nil && len(res.Moved) == 0 {
		return err
	}
	missing := res.MissingQueues()
	if r.g.JSON {
		out := ladderRedriveJSON{DryRun: c.DryRun, Moved: nonNil(res.Moved), Stayed: nonNil(res.Stayed), MissingQueues: nonNil(missing), Unmatched: nonNil(res.Unmatched), Notes: nonNil(notes)}
		if jerr := r.printJSON(out); jerr != nil {
			return jerr
		}
	} else {
		verb, stays := "put back", "stay"
		if c.DryRun {
			verb, stays = "would put back", "would stay"
		}
		printf(r.env.Stdout, "%s %s\n", verb, plural(len(res.Moved), "unrouted wait"))
		for _, q := range countByQueue(res.Moved) {
			printf(r.env.Stdout, "  %d onto %s\n", q.n, q.queue)
		}
		if len(res.Stayed) > 0 {
			printf(r.env.Stdout, "%s %s: their queue does not exist\n", plural(len(res.Stayed), "unrouted wait"), stays)
			for _, q := range countByQueue(res.Stayed) {
				printf(r.env.Stdout, "  %d for %s\n", q.n, q.queue)
			}
		}
		for _, n := range notes {
			printf(r.env.Stdout, "note: %s\n", n)
		}
	}
	if err != nil {
		// Some moved: they are listed above.
		return fail(ExitFailure, "ladder redrive stopped after %d put back: %s; the waits not put back stay unrouted", len(res.Moved), plain(err))
	}
	if uerr := unmatched("ladder redrive", res.Unmatched); uerr != nil {
		return uerr
	}
	if len(missing) > 0 {
		quoted := make([]string, len(missing))
		for i, n := range missing {
			quoted[i] = strconv.Quote(n)
		}
		return fail(ExitFailure, "ladder redrive: %s %s unrouted, since no queue %s exists; a worker or producer of it declares it when it starts: then re-drive again",
			plural(len(res.Stayed), "wait"), stays(c.DryRun), strings.Join(quoted, ", "))
	}
	return nil
}

func stays(dry bool) string {
	if dry {
		return "would stay"
	}
	return "stay"
}

// queueCount is how many waits are for one queue.
type queueCount struct {
	queue string
	n     int
}

// countByQueue counts ws by queue, in the order each queue first comes.
func countByQueue(ws []admin.UnroutedWait) []queueCount {
	var out []queueCount
	at := map[string]int{}
	for _, w := range ws {
		i, ok := at[w.Queue]
		if !ok {
			i = len(out)
			at[w.Queue] = i
			out = append(out, queueCount{queue: w.Queue})
		}
		out[i].n++
	}
	return out
}

// queueLadders returns the delay ladders for queuey queues (none when the
// backend has none), and a note for each that holds unrouted waits.
func (r *run) queueLadders(be Admin) ([]admin.LadderStats, []string, error) {
	la, ok := be.(admin.LadderAdmin)
	if !ok {
		return []admin.LadderStats{}, nil, nil
	}
	ls, _, err := r.ladders(la)
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	for _, l := range ls {
		if l.Unrouted > 0 {
			notes = append(notes, sprintf("%s: %s whose queue was deleted while they waited; queuey ladder unrouted lists them by queue, queuey ladder redrive puts them back",
				l.UnroutedQueue, plural(l.Unrouted, "unrouted wait")))
		}
	}
	return ls, notes, nil
}
