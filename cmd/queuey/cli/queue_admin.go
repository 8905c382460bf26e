package cli

import (
	"errors"

	"github.com/queuey/queuey/admin"
)

type queuePurgeCmd struct {
	Queue string `arg:"" name:"queue" help:"The queue whose ready jobs to delete."`
	Yes   bool   `name:"yes" short:"y" help:"Do not ask for confirmation."`
	Force bool   `name:"force" help:"Purge even while consumers are attached."`
}

type queueDeleteCmd struct {
	Queue     string `arg:"" name:"queue" help:"The queue to delete."`
	WithWaits bool   `name:"with-waits" help:"Also delete its dead letters, hold queues (retries and deferrals waiting) and pause marker."`
	Yes       bool   `name:"yes" short:"y" help:"Do not ask for confirmation."`
	Force     bool   `name:"force" help:"Delete even while consumers are attached."`
}

// purgeJSON is what queues purge prints with --json.
type purgeJSON struct {
	Queue  string `json:"queue"`
	Purged int    `json:"purged"`
}

// deleteJSON is what queues delete prints with --json: what it deleted,
// and the queues named like its waits that are not, which it kept.
type deleteJSON struct {
	Queue   string               `json:"queue"`
	Deleted []admin.DeletedQueue `json:"deleted"`
	Kept    []admin.KeptQueue    `json:"kept"`
}

// queueAdmin opens the backend for a purge or delete of queue, and reads
// the queue's stats; it refuses while consumers are attached unless force.
// missingOK lets a queue that does not exist through (zero stats).
func (r *run) queueAdmin(verb, queue string, force, missingOK bool) (admin.QueueAdmin, admin.QueueStats, func() error, error) {
	be, closeFn, err := r.open()
	if err != nil {
		return nil, admin.QueueStats{}, nil, err
	}
	qa, ok := be.(admin.QueueAdmin)
	if !ok {
		closeFn()
		return nil, admin.QueueStats{}, nil, fail(ExitFailure, "this backend cannot %s queues", verb)
	}
	st, err := be.QueueStats(r.ctx, admin.Queue{Name: queue})
	if err != nil && !missingOK {
		closeFn()
		return nil, admin.QueueStats{}, nil, queueFailure(queue, err)
	}
	if err == nil && st[0].Consumers > 0 && !force {
		closeFn()
		return nil, admin.QueueStats{}, nil, fail(ExitFailure, "refusing to %s %s: %s attached; stop its workers first, or pass --force", verb, queue, plural(st[0].Consumers, "consumer"))
	}
	var s admin.QueueStats
	if err == nil {
		s = st[0]
	}
	return qa, s, closeFn, nil
}

func (c *queuePurgeCmd) Run(r *run) error {
	qa, st, closeFn, err := r.queueAdmin("purge", c.Queue, c.Force, false)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := r.confirm(c.Yes, "purge a queue", sprintf("Delete the %s of %s for good?", plural(st.Ready, "ready job"), c.Queue)); err != nil {
		return err
	}
	n, err := qa.PurgeQueue(r.ctx, c.Queue)
	if err != nil {
		return queueFailure(c.Queue, err)
	}
	if r.g.JSON {
		return r.printJSON(purgeJSON{Queue: c.Queue, Purged: n})
	}
	printf(r.env.Stdout, "purged %s from %s\n", plural(n, "ready job"), c.Queue)
	return nil
}

func (c *queueDeleteCmd) Run(r *run) error {
	qa, st, closeFn, err := r.queueAdmin("delete", c.Queue, c.Force, c.WithWaits)
	if err != nil {
		return err
	}
	defer closeFn()
	q := sprintf("Delete queue %s and its %s for good?", c.Queue, plural(st.Ready, "ready job"))
	if c.WithWaits {
		q = sprintf("Delete queue %s, its %s, its dead letters, its hold queues and its pause marker for good?", c.Queue, plural(st.Ready, "ready job"))
	}
	if err := r.confirm(c.Yes, "delete a queue", q); err != nil {
		return err
	}
	res, err := qa.DeleteQueue(r.ctx, c.Queue, admin.DeleteQueueOptions{WithWaits: c.WithWaits, Force: c.Force})
	deleted := res.Deleted
	if r.g.JSON {
		if jerr := r.printJSON(deleteJSON{Queue: c.Queue, Deleted: nonNil(deleted), Kept: nonNil(res.Kept)}); jerr != nil {
			return jerr
		}
	} else {
		for _, d := range deleted {
			printf(r.env.Stdout, "deleted queue %s with %s\n", d.Name, plural(d.Jobs, "job"))
		}
		for _, k := range res.Kept {
			printf(r.env.Stdout, "kept queue %s with %s: %s\n", k.Name, plural(k.Jobs, "job"), k.Why)
		}
	}
	switch {
	case errors.Is(err, admin.ErrQueueInUse):
		return fail(ExitFailure, "refusing to delete %s: consumers are attached; stop its workers first, or pass --force", c.Queue)
	case err != nil:
		return queueFailure(c.Queue, err)
	case len(deleted) == 0:
		return fail(ExitFailure, "nothing to delete: neither queue %q nor its dead letters, hold queues or pause marker exist", c.Queue)
	}
	return nil
}
