package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

type lsCmd struct {
	Queue string `arg:"" help:"The logical queue (not its .dead queue)."`
	Limit int    `name:"limit" default:"50" help:"Show at most N letters."`
	After string `name:"after" placeholder:"CURSOR" help:"Start after this letter: the cursor the previous page printed, or a job ID."`
}

func (c *lsCmd) Run(r *run) error {
	if c.Limit < 1 || c.Limit > admin.MaxDeadLetterLimit {
		return usagef("--limit %d: want 1..%d", c.Limit, admin.MaxDeadLetterLimit)
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	list, err := be.DeadLetters(r.ctx, c.Queue, admin.DeadLetterPage{After: c.After, Limit: c.Limit})
	if err != nil {
		return deadFailure(c.Queue, err)
	}
	if r.g.JSON {
		page := deadPageJSON{Letters: make([]admin.DeadLetterInfo, len(list.Letters)), Total: list.Total}
		for i, l := range list.Letters {
			l.EnqueuedAt = l.EnqueuedAt.UTC()
			page.Letters[i] = l
		}
		if list.Next != "" {
			page.NextCursor = &list.Next
		}
		return r.printJSON(page)
	}
	if len(list.Letters) == 0 {
		printf(r.env.Stdout, "no dead letters on %s\n", c.Queue)
		return nil
	}
	rows := make([][]string, 0, len(list.Letters))
	for _, l := range list.Letters {
		kind, attempt, enq := l.Kind, fmt.Sprintf("%d/%d", l.Attempt, l.MaxAttempts), l.EnqueuedAt.UTC().Format(time.RFC3339)
		if l.Poison {
			kind, attempt, enq = "(poison)", "-", "-"
		}
		rows = append(rows, []string{l.ID, orDash(kind), attempt, enq, timeOrDash(l.DeadLetteredAt, time.RFC3339), clip(l.Reason, 70)})
	}
	table(r.env.Stdout, []string{"ID", "KIND", "ATTEMPT", "ENQUEUED_AT", "DEAD_LETTERED_AT", "REASON"}, rows)
	printf(r.env.Stdout, "\n%d of %s of %s", len(list.Letters), plural(list.Total, "dead letter"), c.Queue)
	if list.Next != "" {
		// A command to copy: its words are quoted for the shell, so
		// that an ID holding a space, a quote or a semicolon runs
		// nothing else.
		fmt.Fprintf(r.env.Stdout, "; next page: queuey dead ls %s --limit %d --after %s", shellWord(c.Queue), c.Limit, shellWord(list.Next))
	}
	fmt.Fprintln(r.env.Stdout)
	return nil
}

// deadPageJSON is what queuey --json dead ls prints: a page of letters,
// the cursor of the next (null on the last page) and how many the queue
// holds.
type deadPageJSON struct {
	Letters    []admin.DeadLetterInfo `json:"letters"`
	NextCursor *string                `json:"next_cursor"`
	Total      int                    `json:"total"`
}

type showCmd struct {
	Queue string `arg:"" help:"The logical queue."`
	ID    string `arg:"" help:"The job ID (as dead ls shows it). Every dead letter that carries it is shown, oldest first: an ID given with WithID is a label that several jobs may carry."`
}

// showJSON is what queuey --json dead show prints: every dead letter of
// the queue that carries the ID, oldest first (one, or more when several
// jobs were enqueued with it).
type showJSON struct {
	Queue   string                 `json:"queue"`
	ID      string                 `json:"id"`
	Letters []admin.DeadLetterInfo `json:"letters"`
}

func (c *showCmd) Run(r *run) error {
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	letters, err := lettersWithID(r, be, c.Queue, c.ID)
	if err != nil {
		return deadFailure(c.Queue, err)
	}
	if len(letters) == 0 {
		return fail(ExitFailure, "no dead letter of %s has the ID %q", c.Queue, c.ID)
	}
	for i := range letters {
		letters[i].EnqueuedAt = letters[i].EnqueuedAt.UTC()
	}
	if r.g.JSON {
		return r.printJSON(showJSON{Queue: c.Queue, ID: c.ID, Letters: letters})
	}
	w := r.env.Stdout
	if len(letters) > 1 {
		printf(w, "%d dead letters of %s carry the ID %q (an ID is a label several jobs may carry); oldest first\n", len(letters), c.Queue, c.ID)
	}
	for i, l := range letters {
		if len(letters) > 1 {
			printf(w, "\n--- dead letter %d of %d with this ID ---\n", i+1, len(letters))
		}
		printLetter(w, l)
	}
	return nil
}

// lettersWithID returns every dead letter of queue that carries id, oldest
// first: it reads the whole dead-letter queue, page by page, since any
// letter may carry it.
func lettersWithID(r *run, be Admin, queue, id string) ([]admin.DeadLetterInfo, error) {
	var out []admin.DeadLetterInfo
	after := ""
	for {
		list, err := be.DeadLetters(r.ctx, queue, admin.DeadLetterPage{After: after, Limit: admin.MaxDeadLetterLimit})
		if err != nil {
			return nil, err
		}
		for _, l := range list.Letters {
			if l.ID == id {
				out = append(out, l)
			}
		}
		if list.Next == "" {
			return out, nil
		}
		after = list.Next
	}
}

// printLetter prints one dead letter, its fields then its payload (or
// body, for a poison letter).
func printLetter(w io.Writer, l admin.DeadLetterInfo) {
	var rows [][]string
	add := func(k, v string) { rows = append(rows, []string{k + ":", v}) }
	add("id", l.ID)
	add("queue", l.Queue)
	deadAt := "not recorded"
	if !l.DeadLetteredAt.IsZero() {
		deadAt = l.DeadLetteredAt.UTC().Format(time.RFC3339Nano)
	}
	if l.Poison {
		add("poison", "yes: the message is not a valid envelope")
		add("dead_lettered_at", deadAt)
		add("reason", l.Reason)
		add("body", fmt.Sprintf("%d bytes", len(l.Body)))
		table(w, nil, rows)
		if printable(l.Body) {
			// Line by line, so that its lines stay lines and every
			// other control is escaped.
			for line := range strings.Lines(string(l.Body)) {
				printf(w, "%s\n", strings.TrimSuffix(line, "\n"))
			}
		} else {
			fmt.Fprint(w, hex.Dump(l.Body))
		}
		return
	}
	add("kind", l.Kind)
	add("attempt", fmt.Sprintf("%d of %d", l.Attempt, l.MaxAttempts))
	add("priority", fmt.Sprint(l.Priority))
	add("enqueued_at", l.EnqueuedAt.Format(time.RFC3339Nano))
	add("dead_lettered_at", deadAt)
	add("reason", l.Reason)
	add("last_error", orDash(l.LastError))
	for _, k := range slices.Sorted(maps.Keys(l.Headers)) {
		add("header "+k, l.Headers[k])
	}
	table(w, nil, rows)
	if l.PayloadError != "" {
		printf(w, "payload: cannot decode: %s\n", l.PayloadError)
		return
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, l.Payload, "", "  "); err != nil {
		pretty.Reset()
		pretty.WriteString(safe(string(l.Payload)))
	}
	fmt.Fprintf(w, "payload:\n%s\n", jsonSafe(pretty.Bytes()))
}

// selector is how redrive and purge pick letters. Each --id is one ID as
// it is (sep:"none", where kong would split on commas): a job ID may hold
// commas.
type selector struct {
	All bool     `name:"all" help:"Every dead letter of the queue."`
	IDs []string `name:"id" sep:"none" placeholder:"ID" help:"This job ID, as it is, commas included (repeat --id for more)."`
	Yes bool     `name:"yes" short:"y" help:"Do not ask for confirmation."`
}

func (s selector) check(what string) error {
	if s.All && len(s.IDs) > 0 {
		return usagef("%s: give --all or --id, not both", what)
	}
	return nil
}

type redriveCmd struct {
	Queue string `arg:"" help:"The logical queue."`
	selector
	Reason string `name:"reason" placeholder:"TEXT" help:"Letters whose reason contains TEXT."`
	Kind   string `name:"kind" placeholder:"KIND" help:"Letters of this job kind (alone, or with --reason)."`
}

func (c *redriveCmd) Run(r *run) error {
	if err := c.check("dead redrive"); err != nil {
		return err
	}
	sel := admin.DeadLetterSelector{All: c.All, IDs: c.IDs, Reason: c.Reason, Kind: c.Kind}
	if sel.Empty() {
		return usagef("dead redrive %s: say which letters: --all, --id ID ..., --reason TEXT or --kind KIND", c.Queue)
	}
	if (c.All || len(c.IDs) > 0) && (c.Reason != "" || c.Kind != "") {
		return usagef("dead redrive: --reason and --kind filter on their own; do not combine them with --all or --id")
	}
	q := sprintf("Re-drive every dead letter of %s back onto %s?", c.Queue, c.Queue)
	switch {
	case len(c.IDs) > 0:
		q = sprintf("Re-drive %s of %s back onto %s?", plural(len(c.IDs), "dead letter"), c.Queue, c.Queue)
	case !c.All:
		q = sprintf("Re-drive the dead letters of %s that %s back onto %s?", c.Queue, filterText(c.Reason, c.Kind), c.Queue)
	}
	if err := r.confirm(c.Yes, "re-drive dead letters", q); err != nil {
		return err
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	p := &progress{w: r.env.Stderr, on: r.env.StderrTerminal}
	res, err := be.RedriveDeadLetters(r.ctx, c.Queue, sel, func(pr admin.RedriveProgress) {
		p.draw("re-driving %s: %d moved, %d refused, of %d dead letters", c.Queue, pr.Moved, pr.Refused, pr.Total)
	})
	p.done()
	if err != nil && len(res.Moved) == 0 && len(res.Refused) == 0 {
		if errors.Is(err, runtime.ErrUnknownQueue) {
			return fail(ExitFailure, "queue %q does not exist on the broker, so its dead letters stay where they are; a worker or producer of it declares it when it starts: then re-drive again", c.Queue)
		}
		return err
	}
	if r.g.JSON {
		out := redriveJSON{Queue: c.Queue, Moved: nonNil(res.Moved), Refused: nonNil(res.Refused), NotFound: nonNil(res.NotFound)}
		if len(c.IDs) > 0 {
			out.MovedByID = countByID(c.IDs, res.Moved)
		}
		if jerr := r.printJSON(out); jerr != nil {
			return jerr
		}
	} else {
		head := sprintf("moved %s of %s back onto %s", plural(len(res.Moved), "dead letter"), c.Queue, c.Queue)
		if len(c.IDs) > 0 && len(res.Moved) > 0 {
			// Per ID: an ID is a label several letters may carry.
			n := countByID(c.IDs, res.Moved)
			var parts []string
			for _, id := range c.IDs {
				if n[id] > 0 {
					parts = append(parts, fmt.Sprintf("%d with ID %s", n[id], strconv.Quote(id)))
					n[id] = 0 // once, however often it was asked for
				}
			}
			head += ": " + strings.Join(parts, ", ")
		}
		fmt.Fprintln(r.env.Stdout, head)
		for _, f := range res.Refused {
			printf(r.env.Stdout, "refused %s: %s\n", f.ID, f.Reason)
			if f.Reason == admin.PoisonRefusal {
				fmt.Fprintf(r.env.Stdout, "  inspect it with queuey dead show %s %s; remove it with queuey dead purge %s --id %s\n",
					shellWord(c.Queue), shellWord(f.ID), shellWord(c.Queue), shellWord(f.ID))
			}
		}
		for _, id := range res.NotFound {
			printf(r.env.Stdout, "not found: %s\n", id)
		}
	}
	if err != nil {
		return err
	}
	if len(res.NotFound) > 0 {
		return notFoundError("dead redrive", c.Queue, len(res.Refused), res.NotFound)
	}
	if len(res.Refused) > 0 {
		return fail(ExitFailure, "dead redrive %s: %s refused", c.Queue, plural(len(res.Refused), "dead letter"))
	}
	if len(res.Moved) == 0 && !c.All {
		return fail(ExitFailure, "dead redrive %s: no dead letter %s", c.Queue, filterText(c.Reason, c.Kind))
	}
	return nil
}

// filterText says what --reason and --kind select, as in "no dead letter
// has the kind K".
func filterText(reason, kind string) string {
	switch {
	case reason != "" && kind != "":
		return sprintf("has the kind %q and a reason containing %q", kind, reason)
	case kind != "":
		return sprintf("has the kind %q", kind)
	}
	return sprintf("has a reason containing %q", reason)
}

// redriveJSON is what dead redrive prints with --json. With --id,
// MovedByID counts the letters moved of each ID asked for (0 for one not
// found or only refused): an ID is a label several letters may carry.
type redriveJSON struct {
	Queue     string                `json:"queue"`
	Moved     []string              `json:"moved"`
	MovedByID map[string]int        `json:"moved_by_id,omitempty"`
	Refused   []admin.RefusedLetter `json:"refused"`
	NotFound  []string              `json:"not_found"`
}

// countByID counts, for each of ids, how often moved holds it.
func countByID(ids, moved []string) map[string]int {
	n := make(map[string]int, len(ids))
	for _, id := range ids {
		n[id] = 0
	}
	for _, id := range moved {
		if _, asked := n[id]; asked {
			n[id]++
		}
	}
	return n
}

// purgeDeadJSON is what dead purge prints with --json.
type purgeDeadJSON struct {
	Queue    string   `json:"queue"`
	Purged   int      `json:"purged"`
	NotFound []string `json:"not_found"`
}

// nonNil is s, or an empty slice for nil: JSON arrays are never null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type purgeCmd struct {
	Queue string `arg:"" help:"The logical queue."`
	selector
}

func (c *purgeCmd) Run(r *run) error {
	if err := c.check("dead purge"); err != nil {
		return err
	}
	sel := admin.DeadLetterSelector{All: c.All, IDs: c.IDs}
	if sel.Empty() {
		return usagef("dead purge %s: say which letters: --all or --id ID ...", c.Queue)
	}
	q := sprintf("Delete %s of %s for good?", plural(len(c.IDs), "dead letter"), c.Queue)
	if c.All {
		q = sprintf("Delete every dead letter of %s for good?", c.Queue)
	}
	if err := r.confirm(c.Yes, "purge dead letters", q); err != nil {
		return err
	}
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	res, err := be.PurgeDeadLetters(r.ctx, c.Queue, sel)
	if err != nil {
		return deadFailure(c.Queue, err)
	}
	if r.g.JSON {
		if err := r.printJSON(purgeDeadJSON{Queue: c.Queue, Purged: res.Purged, NotFound: nonNil(res.NotFound)}); err != nil {
			return err
		}
	} else {
		printf(r.env.Stdout, "purged %s of %s\n", plural(res.Purged, "dead letter"), c.Queue)
		for _, id := range res.NotFound {
			printf(r.env.Stdout, "not found: %s\n", id)
		}
	}
	if len(res.NotFound) > 0 {
		return notFoundError("dead purge", c.Queue, 0, res.NotFound)
	}
	return nil
}

// notFoundError is the error of a re-drive or purge (cmd) of queue when
// IDs asked for match no dead letter: it names each, quoted, so that an
// ID with a comma or a space reads as one. refused counts letters a
// re-drive kept besides.
func notFoundError(cmd, queue string, refused int, ids []string) error {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = strconv.Quote(id)
	}
	msg := fmt.Sprintf("%s %s: no dead letter has the ID %s", cmd, queue, strings.Join(quoted, ", "))
	if len(ids) > 1 {
		msg = fmt.Sprintf("%s %s: no dead letter has any of the IDs %s", cmd, queue, strings.Join(quoted, ", "))
	}
	if refused > 0 {
		msg += fmt.Sprintf("; %d refused", refused)
	}
	return errors.New(msg)
}
