package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/queuey/queuey/internal/adminapi"
	"github.com/queuey/queuey/internal/rules/errs"
)

// memHold is one wait of a MemoryBackend: a job held by a timer.
type memHold struct {
	queue string
	kind  adminapi.HoldKind
	due   time.Time
}

// memDead is a dead letter of a MemoryBackend: a dead job, or the raw body
// of a message that was not a valid envelope.
type memDead struct {
	env    *Envelope // nil for poison
	reason string
	body   []byte    // poison only
	at     time.Time // when it was dead-lettered, on the backend's clock, UTC
}

// info describes d, a dead letter of queue, as operators see it.
func (d memDead) info(queue string) adminapi.DeadLetterInfo {
	if d.env == nil {
		return adminapi.DeadLetterInfo{ID: adminapi.PoisonID(d.body), Queue: queue, Reason: d.reason, Poison: true, Body: d.body, Payload: json.RawMessage("null"), DeadLetteredAt: d.at}
	}
	e := d.env
	info := adminapi.DeadLetterInfo{
		ID: e.ID, Queue: queue, Kind: e.Kind, Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
		Priority: e.Priority, EnqueuedAt: e.EnqueuedAt, Headers: e.Headers,
		Reason: d.reason, LastError: e.LastError, DeadLetteredAt: d.at,
	}
	if p, err := adminapi.PayloadJSON(e.Payload); err != nil {
		info.Payload, info.PayloadError = json.RawMessage("null"), err.Error()
	} else {
		info.Payload = p
	}
	return info
}

// queueLocked returns the declared queue name.
func (b *MemoryBackend) queueLocked(name string) (*memQueue, error) {
	if b.closed {
		return nil, ErrClosed
	}
	q, ok := b.queues[name]
	if !ok {
		return nil, errs.Unknown(name, "was not declared on this backend")
	}
	return q, nil
}

// Queues returns every queue declared on b, sorted.
func (b *MemoryBackend) Queues(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return nil, ErrClosed
	}
	names := make([]string, 0, len(b.queues))
	for n := range b.queues {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// QueueStats returns each queue's counts. Its holds are its timers, one
// HoldStats per kind, with the exact time the first is due.
func (b *MemoryBackend) QueueStats(ctx context.Context, queues ...adminapi.Queue) ([]adminapi.QueueStats, error) {
	b.mu.Lock()
	defer b.unlock()
	out := make([]adminapi.QueueStats, 0, len(queues))
	for _, cfg := range queues {
		q, err := b.queueLocked(cfg.Name)
		if err != nil {
			return nil, err
		}
		st := adminapi.QueueStats{Queue: cfg.Name, Ready: q.ready.Len(), Dead: len(q.dead), Holds: []adminapi.HoldStats{}, Paused: b.pauses.paused[cfg.Name]}
		for _, s := range q.subs {
			st.Unacked += len(s.unacked)
			if !s.stopped {
				st.Consumers++
			}
		}
		for _, kind := range []adminapi.HoldKind{adminapi.HoldRetry, adminapi.HoldDeferred} {
			h := adminapi.HoldStats{Name: cfg.Name + " " + string(kind) + " timers", Kind: kind}
			for _, w := range b.timers {
				if w.queue != cfg.Name || w.kind != kind {
					continue
				}
				h.Jobs++
				if h.NextReleaseBy.IsZero() || w.due.Before(h.NextReleaseBy) {
					h.NextReleaseBy = w.due
				}
			}
			if h.Jobs > 0 {
				st.Holds = append(st.Holds, h)
				st.Waiting += h.Jobs
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// DeadLetters returns a page of queue's dead letters, oldest first.
func (b *MemoryBackend) DeadLetters(ctx context.Context, queue string, page adminapi.DeadLetterPage) (adminapi.DeadLetterList, error) {
	limit := pageLimit(page.Limit)
	b.mu.Lock()
	defer b.unlock()
	q, err := b.queueLocked(queue)
	if err != nil {
		return adminapi.DeadLetterList{}, err
	}
	list := adminapi.DeadLetterList{Letters: []adminapi.DeadLetterInfo{}, Total: len(q.dead)}
	start := 0
	if page.After != "" {
		_, after := adminapi.ParseCursor(page.After)
		start = -1
		for i, d := range q.dead {
			if d.info(queue).ID == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return adminapi.DeadLetterList{}, fmt.Errorf("%w: queue %q has no dead letter %q to page after (re-driven or purged since?)", adminapi.ErrDeadLetterNotFound, queue, after)
		}
	}
	for _, d := range q.dead[start:] {
		if len(list.Letters) == limit {
			list.Next = adminapi.Cursor(start+limit, list.Letters[limit-1].ID)
			break
		}
		list.Letters = append(list.Letters, d.info(queue))
	}
	return list, nil
}

// pageLimit is the page size an admin.DeadLetterPage.Limit asks for.
func pageLimit(n int) int {
	if n <= 0 {
		return adminapi.DefaultDeadLetterLimit
	}
	return min(n, adminapi.MaxDeadLetterLimit)
}

// DeadLetter returns the dead letter of queue with ID id.
func (b *MemoryBackend) DeadLetter(ctx context.Context, queue, id string) (adminapi.DeadLetterInfo, error) {
	b.mu.Lock()
	defer b.unlock()
	q, err := b.queueLocked(queue)
	if err != nil {
		return adminapi.DeadLetterInfo{}, err
	}
	for _, d := range q.dead {
		if info := d.info(queue); info.ID == id {
			return info, nil
		}
	}
	return adminapi.DeadLetterInfo{}, fmt.Errorf("%w: queue %q has no dead letter %q", adminapi.ErrDeadLetterNotFound, queue, id)
}

// RedriveDeadLetters puts the selected dead letters back on queue, one at
// a time, each in one critical section with its removal.
func (b *MemoryBackend) RedriveDeadLetters(ctx context.Context, queue string, sel adminapi.DeadLetterSelector, progress func(adminapi.RedriveProgress)) (adminapi.RedriveResult, error) {
	res := adminapi.RedriveResult{Moved: []string{}}
	if sel.Empty() {
		return res, fmt.Errorf("%w: re-drive of %q", adminapi.ErrEmptySelector, queue)
	}
	seen := map[string]bool{}
	b.mu.Lock()
	q, err := b.queueLocked(queue)
	total := 0
	if err == nil {
		total = len(q.dead)
	}
	b.unlock()
	if err != nil {
		return res, err
	}
	next := 0 // index in q.dead of the first letter not looked at yet
	for {
		if err := ctx.Err(); err != nil {
			res.NotFound = sel.NotFound(seen)
			return res, fmt.Errorf("re-drive of %q stopped after %d moved: %w", queue, len(res.Moved), err)
		}
		b.mu.Lock()
		if b.closed {
			b.unlock()
			return res, ErrClosed
		}
		i := next
		var info adminapi.DeadLetterInfo
		for ; i < len(q.dead); i++ {
			info = q.dead[i].info(queue)
			if sel.Selects(info) {
				break
			}
		}
		if i == len(q.dead) {
			b.unlock()
			break
		}
		seen[info.ID] = true
		d := q.dead[i]
		if d.env == nil {
			res.Refused = append(res.Refused, adminapi.RefusedLetter{ID: info.ID, Reason: adminapi.PoisonRefusal})
			next = i + 1
		} else {
			env := RedriveEnvelope(d.env, queue, time.Now())
			b.seq++
			b.pushLocked(q, &memMsg{env: env, prio: min(env.Priority, q.cfg.topPriority()), seq: b.seq})
			q.dead = slices.Delete(q.dead, i, i+1)
			res.Moved = append(res.Moved, info.ID)
			next = i
		}
		b.unlock()
		if progress != nil {
			progress(adminapi.RedriveProgress{Moved: len(res.Moved), Refused: len(res.Refused), Total: total})
		}
	}
	res.NotFound = sel.NotFound(seen)
	return res, nil
}

// PurgeDeadLetters deletes the selected dead letters of queue.
func (b *MemoryBackend) PurgeDeadLetters(ctx context.Context, queue string, sel adminapi.DeadLetterSelector) (adminapi.PurgeResult, error) {
	if sel.Empty() {
		return adminapi.PurgeResult{}, fmt.Errorf("%w: purge of %q", adminapi.ErrEmptySelector, queue)
	}
	if err := ctx.Err(); err != nil {
		return adminapi.PurgeResult{}, err
	}
	b.mu.Lock()
	defer b.unlock()
	q, err := b.queueLocked(queue)
	if err != nil {
		return adminapi.PurgeResult{}, err
	}
	seen := map[string]bool{}
	before := len(q.dead)
	q.dead = slices.DeleteFunc(q.dead, func(d memDead) bool {
		info := d.info(queue)
		if sel.Selects(info) {
			seen[info.ID] = true
			return true
		}
		return false
	})
	return adminapi.PurgeResult{Purged: before - len(q.dead), NotFound: sel.NotFound(seen)}, nil
}

// deadNow is the time a letter dead-lettered now records: the backend's
// clock (a test's fake one included), in UTC.
func (b *MemoryBackend) deadNow() time.Time { return b.clk.Now().UTC() }
