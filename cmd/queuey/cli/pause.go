package cli

import (
	"errors"

	"github.com/queuey/queuey/admin"
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
	// Changed is false when the queue was in that state already.
	Changed bool `json:"changed"`
}

func (c *pauseCmd) Run(r *run) error { return r.setPaused(c.Queue, true) }

func (c *resumeCmd) Run(r *run) error { return r.setPaused(c.Queue, false) }

func (r *run) setPaused(queue string, paused bool) error {
	be, closeFn, err := r.open()
	if err != nil {
		return err
	}
	defer closeFn()
	was, err := be.Paused(r.ctx, queue)
	if err != nil {
		return err
	}
	if !was {
		// A paused queue may be resumed after the queue itself went; any
		// other must exist.
		if _, err := be.QueueStats(r.ctx, admin.Queue{Name: queue}); err != nil {
			return queueFailure(queue, err)
		}
	}
	if paused {
		err = be.PauseQueue(r.ctx, queue)
	} else {
		err = be.ResumeQueue(r.ctx, queue)
	}
	if err != nil {
		return queueFailure(queue, err)
	}
	if r.g.JSON {
		return r.printJSON(pauseResult{Queue: queue, Paused: paused, Changed: was != paused})
	}
	switch {
	case was == paused && paused:
		printf(r.env.Stdout, "%s was paused already: nothing changed\n", queue)
	case was == paused:
		printf(r.env.Stdout, "%s was not paused: nothing changed\n", queue)
	case paused:
		printf(r.env.Stdout, "paused %s: workers take none of its jobs within a second; jobs running finish, enqueues go on\n", queue)
	default:
		printf(r.env.Stdout, "resumed %s: workers take its jobs again within a second\n", queue)
	}
	return nil
}

// queueFailure is err, about queue, in the operator's words when it says
// the queue does not exist.
func queueFailure(queue string, err error) error {
	if errors.Is(err, runtime.ErrUnknownQueue) {
		return fail(ExitFailure, "queue %q does not exist on the broker (workers and producers declare their queues when they start; queuey queues lists those that exist)", queue)
	}
	return err
}

// deadFailure is err, from reading or changing queue's dead letters, in
// the operator's words when it says there is no dead-letter queue.
func deadFailure(queue string, err error) error {
	if errors.Is(err, runtime.ErrUnknownQueue) {
		return fail(ExitFailure, "queue %q has no dead-letter queue on the broker: no such queue, or no worker or producer has declared it", queue)
	}
	return err
}

var _ Admin = (*runtime.MemoryBackend)(nil)
