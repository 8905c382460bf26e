package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/textfmt"
	"github.com/queuey/queuey/outbox"
)

type outboxStatusCmd struct {
	database
}

func (c *outboxStatusCmd) Run(r *run) error {
	pool, shown, err := c.pool(r)
	if err != nil {
		return err
	}
	defer pool.Close()
	s, err := outbox.ReadStats(r.ctx, pool)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if r.g.JSON {
		if s.Queues == nil {
			s.Queues = []admin.OutboxQueueStats{}
		}
		return r.printJSON(s)
	}
	printf(r.env.Stdout, "outbox of %s: %d pending (%d retrying), oldest %s; %d dead\n",
		shown, s.Pending, s.Retrying, textfmt.Age(s.OldestAge), s.Dead)
	if len(s.Queues) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(s.Queues))
	for _, q := range s.Queues {
		rows = append(rows, []string{q.Queue, orDash(q.Kind), fmt.Sprint(q.Pending), fmt.Sprint(q.Retrying), textfmt.Age(q.OldestAge), fmt.Sprint(q.Dead), orDash(clip(q.LastError, 70))})
	}
	fmt.Fprintln(r.env.Stdout)
	table(r.env.Stdout, []string{"QUEUE", "KIND", "PENDING", "RETRYING", "OLDEST", "DEAD", "LAST_ERROR"}, rows)
	if s.Dead > 0 {
		printf(r.env.Stdout, "\nsee them with queuey outbox dead ls; put them back with queuey outbox dead retry\n")
	}
	return nil
}

type outboxDeadCmd struct {
	Ls    outboxDeadLsCmd    `cmd:"" help:"List the outbox's dead rows (jobs the relay could not publish), oldest first, with the reason."`
	Retry outboxDeadRetryCmd `cmd:"" help:"Put dead rows back in the outbox for the relay to publish (after their queue was declared, say). Asks for confirmation."`
	Purge outboxDeadPurgeCmd `cmd:"" help:"Delete dead rows for good. Asks for confirmation."`
}

type outboxDeadLsCmd struct {
	database
	Queue string `name:"queue" placeholder:"QUEUE" help:"Only the rows of this queue."`
	Limit int    `name:"limit" default:"50" help:"Show at most N rows."`
}

// outboxDeadJSON is what queuey --json outbox dead ls prints.
type outboxDeadJSON struct {
	Rows  []outbox.DeadRow `json:"rows"`
	Total int64            `json:"total"`
}

func (c *outboxDeadLsCmd) Run(r *run) error {
	if c.Limit < 1 || c.Limit > 10000 {
		return usagef("--limit %d: want 1..10000", c.Limit)
	}
	pool, shown, err := c.pool(r)
	if err != nil {
		return err
	}
	defer pool.Close()
	list, total, err := outbox.ListDead(r.ctx, pool, outbox.DeadSelector{Queue: c.Queue}, c.Limit)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if r.g.JSON {
		if list == nil {
			list = []outbox.DeadRow{}
		}
		for i := range list {
			list[i].DeadAt = list[i].DeadAt.UTC()
		}
		return r.printJSON(outboxDeadJSON{Rows: list, Total: total})
	}
	if len(list) == 0 {
		printf(r.env.Stdout, "no dead rows in the outbox of %s\n", shown)
		return nil
	}
	rows := make([][]string, 0, len(list))
	for _, d := range list {
		rows = append(rows, []string{fmt.Sprint(d.Seq), clip(d.ID, 40), clip(d.Queue, 40), orDash(clip(d.Kind, 30)), d.DeadAt.UTC().Format(time.RFC3339), clip(d.Reason, 70)})
	}
	table(r.env.Stdout, []string{"SEQ", "ID", "QUEUE", "KIND", "DEAD_AT", "REASON"}, rows)
	printf(r.env.Stdout, "\n%d of %s\n", len(list), plural(int(total), "dead row"))
	return nil
}

// outboxSelector is how outbox dead retry and purge pick rows. Each --id
// is one ID as it is (sep:"none"): a job ID may hold commas.
type outboxSelector struct {
	database
	All   bool     `name:"all" help:"Every dead row."`
	Queue string   `name:"queue" placeholder:"QUEUE" help:"Every dead row of this queue."`
	IDs   []string `name:"id" sep:"none" placeholder:"ID" help:"The rows of this job ID, as it is, commas included (repeat --id for more)."`
	Yes   bool     `name:"yes" short:"y" help:"Do not ask for confirmation."`
}

// selector returns the rows s picks, or a usage error unless exactly one
// of --all, --queue and --id is given; what names them for a question.
func (s outboxSelector) selector(cmd string) (outbox.DeadSelector, string, error) {
	sel := outbox.DeadSelector{All: s.All, Queue: s.Queue, IDs: s.IDs}
	n := 0
	for _, set := range []bool{s.All, s.Queue != "", len(s.IDs) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return sel, "", usagef("outbox dead %s: say which rows with one of --all, --queue QUEUE or --id ID ...", cmd)
	}
	switch {
	case s.All:
		return sel, "every dead row of the outbox", nil
	case s.Queue != "":
		return sel, sprintf("every dead row of queue %s", s.Queue), nil
	}
	return sel, sprintf("the dead rows of %s", plural(len(s.IDs), "job ID")), nil
}

type outboxDeadRetryCmd struct {
	outboxSelector
}

func (c *outboxDeadRetryCmd) Run(r *run) error {
	return c.apply(r, "retry", "put %s back in the outbox?", "put back", outbox.RetryDead)
}

type outboxDeadPurgeCmd struct {
	outboxSelector
}

func (c *outboxDeadPurgeCmd) Run(r *run) error {
	return c.apply(r, "purge", "delete %s for good?", "deleted", outbox.PurgeDead)
}

// apply asks question (%s: the rows picked), then does op on them and
// says what it did (done: "put back").
func (s outboxSelector) apply(r *run, cmd, question, done string, op func(ctx context.Context, pool *pgxpool.Pool, sel outbox.DeadSelector) (outbox.DeadResult, error)) error {
	sel, what, err := s.selector(cmd)
	if err != nil {
		return err
	}
	if err := r.confirm(s.Yes, cmd+" outbox dead rows", sprintf("Outbox: "+question, what)); err != nil {
		return err
	}
	pool, shown, err := s.pool(r)
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := op(r.ctx, pool, sel)
	if err != nil {
		return fmt.Errorf("%s: %w", shown, err)
	}
	if r.g.JSON {
		if err := r.printJSON(res); err != nil {
			return err
		}
	} else {
		printf(r.env.Stdout, "%s %s\n", done, plural(len(res.Done), "dead row"))
		for _, d := range res.Refused {
			printf(r.env.Stdout, "refused row %d (job %s): %s\n", d.Seq, d.ID, d.Reason)
		}
		for _, id := range res.NotFound {
			printf(r.env.Stdout, "not found: %s\n", id)
		}
	}
	switch {
	case len(res.Refused) > 0:
		return fail(ExitFailure, "outbox dead %s: %s refused: the outbox's rules refuse them; remove them with queuey outbox dead purge", cmd, plural(len(res.Refused), "row"))
	case len(res.NotFound) > 0:
		return fail(ExitFailure, "outbox dead %s: no dead row has the ID %q", cmd, res.NotFound[0])
	case len(res.Done) == 0 && !sel.All:
		return fail(ExitFailure, "outbox dead %s: no dead row matches", cmd)
	}
	return nil
}
