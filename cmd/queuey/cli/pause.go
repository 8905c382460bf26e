package cli

import (
	"github.com/queuey/queuey/runtime"
)

type pauseCmd struct {
	Queue string `arg:"" name:"queue" help:"The queue to pause."`
}

type resumeCmd struct {
	Queue string `arg:"" name:"queue" help:"The queue to resume."`
}

// pauseResult is what pause and resume print with --json.
type pauseResult struct {
	Queue  string `json:"queue"`
	Paused bool   `json:"paused"`
}

func (c *pauseCmd) Run(r *run) error { return r.setPaused(c.Queue, true) }

func (c *resumeCmd) Run(r *run) error { return r.setPaused(c.Queue, false) }

func (r *run) setPaused(queue string, paused bool) error {
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	if paused {
		err = be.PauseQueue(r.ctx, queue)
	} else {
		err = be.ResumeQueue(r.ctx, queue)
	}
	if err != nil {
		return err
	}
	if r.g.JSON {
		return r.printJSON(pauseResult{Queue: queue, Paused: paused})
	}
	if paused {
		printf(r.env.Stdout, "paused %s: workers take none of its jobs within a second; jobs running finish, enqueues go on\n", queue)
	} else {
		printf(r.env.Stdout, "resumed %s: workers take its jobs again within a second\n", queue)
	}
	return nil
}

var _ Admin = (*runtime.MemoryBackend)(nil)
