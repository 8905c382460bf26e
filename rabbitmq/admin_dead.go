package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

var (
	_ admin.Inspector       = (*Backend)(nil)
	_ admin.DeadLetterAdmin = (*Backend)(nil)
)

// DeadLetters returns a page of queue's dead letters, oldest first, and
// leaves them all in place (see the package doc on reading dead letters).
// On a classic dead-letter queue a page costs reading it from its head to
// the page's last letter: the first pages are cheap, the page after
// position n reads n letters first. On a quorum one every page costs a
// copy of every letter.
func (b *Backend) DeadLetters(ctx context.Context, queue string, page admin.DeadLetterPage) (admin.DeadLetterList, error) {
	return b.ops.letters(ctx, queue, page)
}

// letters is Backend.DeadLetters.
func (o *ops) letters(ctx context.Context, queue string, page admin.DeadLetterPage) (admin.DeadLetterList, error) {
	limit := page.Limit
	if limit <= 0 {
		limit = admin.DefaultDeadLetterLimit
	}
	limit = min(limit, admin.MaxDeadLetterLimit)
	pos, after := admin.ParseCursor(page.After)
	if o.opts.DeadLetterIndex && page.After != "" {
		if list, ok, err := o.indexedPage(ctx, queue, after, limit); ok {
			return list, err
		}
	}
	window := 0 // a plain ID: read until it is found
	switch {
	case page.After == "":
		window = limit + 1
	case pos > 0:
		// Letters only ever leave from before the cursor, so it is at pos
		// or nearer the head.
		window = pos + limit + 1
	}
	s, err := o.scanDead(ctx, queue, window)
	if err != nil {
		return admin.DeadLetterList{}, err
	}
	list, err := collectPage(ctx, s, after, limit)
	return list, errors.Join(err, s.close(ctx))
}

func collectPage(ctx context.Context, s *deadScan, after string, limit int) (admin.DeadLetterList, error) {
	list := admin.DeadLetterList{Letters: []admin.DeadLetterInfo{}, Total: s.depth}
	found := after == ""
	n := 0
	for {
		m, ok, err := s.next(ctx)
		if err != nil {
			return admin.DeadLetterList{}, err
		}
		if !ok {
			break
		}
		n++
		s.keep(m)
		if !found {
			// Matched on the ID alone: the letters before the page are
			// not decoded.
			found = letterID(m) == after
			continue
		}
		if len(list.Letters) == limit {
			list.Next = admin.Cursor(n-1, list.Letters[limit-1].ID)
			break
		}
		list.Letters = append(list.Letters, s.letter(m))
	}
	if !found {
		return admin.DeadLetterList{}, fmt.Errorf("%w: queue %q has no dead letter %q to page after (re-driven or purged since?)", admin.ErrDeadLetterNotFound, s.queue, after)
	}
	return list, nil
}

// DeadLetter returns the dead letter of queue with ID id and leaves it in
// place. It reads the dead-letter queue from its head up to that letter,
// and on a quorum one on to its end, copying every letter. With
// Options.DeadLetterIndex, a classic one is read from its index.
func (b *Backend) DeadLetter(ctx context.Context, queue, id string) (admin.DeadLetterInfo, error) {
	return b.ops.deadLetter(ctx, queue, id)
}

// deadLetter is Backend.DeadLetter.
func (o *ops) deadLetter(ctx context.Context, queue, id string) (admin.DeadLetterInfo, error) {
	if o.opts.DeadLetterIndex {
		if info, ok, err := o.indexedLetter(ctx, queue, id); ok {
			return info, err
		}
	}
	s, err := o.scanDead(ctx, queue, 0)
	if err != nil {
		return admin.DeadLetterInfo{}, err
	}
	info, err := func() (admin.DeadLetterInfo, error) {
		for {
			m, ok, err := s.next(ctx)
			if err != nil {
				return admin.DeadLetterInfo{}, err
			}
			if !ok {
				return admin.DeadLetterInfo{}, fmt.Errorf("%w: queue %q has no dead letter %q", admin.ErrDeadLetterNotFound, queue, id)
			}
			s.keep(m)
			if letterID(m) == id {
				return s.letter(m), nil
			}
		}
	}()
	return info, errors.Join(err, s.close(ctx))
}

// redriveBatchMax bounds how many re-driven letters are published at once
// before their confirms are awaited. Batches start at one letter and
// double, so a re-drive stopped early has moved few.
const redriveBatchMax = 128

// RedriveDeadLetters puts the selected dead letters of queue back on
// queue: each is published, mandatory, and confirmed before it is acked
// away from the dead-letter queue, so a crash in between leaves it in both
// (a duplicate) and never in neither. Letters not selected, poison letters
// and letters whose publish failed stay where they were.
func (b *Backend) RedriveDeadLetters(ctx context.Context, queue string, sel admin.DeadLetterSelector, progress func(admin.RedriveProgress)) (admin.RedriveResult, error) {
	return b.ops.redriveDeadLetters(ctx, queue, sel, progress)
}

// redriveDeadLetters is Backend.RedriveDeadLetters.
func (o *ops) redriveDeadLetters(ctx context.Context, queue string, sel admin.DeadLetterSelector, progress func(admin.RedriveProgress)) (admin.RedriveResult, error) {
	res := admin.RedriveResult{Moved: []string{}}
	if sel.Empty() {
		return res, fmt.Errorf("%w: re-drive of %q", admin.ErrEmptySelector, queue)
	}
	if err := o.checkWorkQueue(ctx, queue); err != nil {
		return res, err
	}
	s, err := o.scanDead(ctx, queue, 0)
	if err != nil {
		return res, err
	}
	r := &redrive{o: o, s: s, sel: sel, res: &res, progress: progress, seen: map[string]bool{}, batch: 1}
	err = r.run(ctx)
	res.NotFound = sel.NotFound(r.seen)
	return res, errors.Join(err, s.close(ctx))
}

// checkWorkQueue fails with runtime.ErrUnknownQueue when queue does not
// exist: re-driven letters would have nowhere to go.
func (o *ops) checkWorkQueue(ctx context.Context, queue string) error {
	_, found, err := inspectQueue(ctx, o.life, o.conn, queue)
	if err != nil {
		return err
	}
	if !found {
		return unknownQueue(fmt.Sprintf("re-drive of %q", queue), fmt.Sprintf("the queue %q does not exist, so its dead letters stay where they are; declare it (start a worker or producer of it) and re-drive again", queue))
	}
	return nil
}

type redrive struct {
	o        *ops
	s        *deadScan
	sel      admin.DeadLetterSelector
	res      *admin.RedriveResult
	progress func(admin.RedriveProgress)
	seen     map[string]bool
	batch    int
	tags     []uint64
	ids      []string
	msgs     []outMsg
}

func (r *redrive) run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("re-drive of %q stopped after %d moved: %w", r.s.queue, len(r.res.Moved), err)
		}
		m, ok, err := r.s.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return r.flush(ctx)
		}
		info := r.s.letter(m)
		if !r.sel.Selects(info) {
			r.s.keep(m)
			continue
		}
		r.seen[info.ID] = true
		if info.Poison {
			r.s.keep(m)
			r.res.Refused = append(r.res.Refused, admin.RefusedLetter{ID: info.ID, Reason: admin.PoisonRefusal})
			r.report()
			continue
		}
		env, err := codec.Decode(m)
		if err != nil { // cannot happen: info says it decodes
			r.s.keep(m)
			r.res.Refused = append(r.res.Refused, admin.RefusedLetter{ID: info.ID, Reason: err.Error()})
			r.report()
			continue
		}
		next := runtime.RedriveEnvelope(env, r.s.queue, time.Now())
		msg, err := r.o.enc.encodeCopy(next, codec.Options{Priority: next.Priority})
		if err != nil {
			r.s.keep(m)
			r.res.Refused = append(r.res.Refused, admin.RefusedLetter{ID: info.ID, Reason: err.Error()})
			r.report()
			continue
		}
		r.tags, r.ids, r.msgs = append(r.tags, m.DeliveryTag), append(r.ids, info.ID), append(r.msgs, outMsg{key: r.s.queue, msg: msg})
		if len(r.msgs) >= r.batch {
			if err := r.flush(ctx); err != nil {
				return err
			}
			r.batch = min(2*r.batch, redriveBatchMax)
		}
	}
}

// flush publishes the pending letters, waits for their confirms, and
// takes each confirmed one away from the dead-letter queue. It stops at
// the first failure; the letters not confirmed stay dead, kept as the scan
// closes.
func (r *redrive) flush(ctx context.Context) error {
	if len(r.msgs) == 0 {
		return nil
	}
	errs := r.o.pub.publishBatch(ctx, r.msgs)
	var failed error
	for i, err := range errs {
		if err != nil {
			if failed == nil {
				failed = err
			}
			continue
		}
		if aerr := r.s.take(ctx, r.tags[i]); aerr != nil {
			// Published, not removed: the job is both re-driven and still
			// dead, which a duplicate at worst.
			return fmt.Errorf("re-drive of %q: job %s was put back but is still a dead letter too: %w", r.s.queue, r.ids[i], aerr)
		}
		r.res.Moved = append(r.res.Moved, r.ids[i])
		r.report()
	}
	r.tags, r.ids, r.msgs = r.tags[:0], r.ids[:0], r.msgs[:0]
	if failed != nil {
		if errors.Is(failed, ErrUnroutable) {
			return unknownQueue(fmt.Sprintf("re-drive of %q", r.s.queue), fmt.Sprintf("the queue went away during the re-drive; the letters not moved stay dead: %v", failed))
		}
		return fmt.Errorf("re-drive of %q stopped after %d moved; the letters not moved stay dead: %w", r.s.queue, len(r.res.Moved), failed)
	}
	return nil
}

func (r *redrive) report() {
	if r.progress != nil {
		r.progress(admin.RedriveProgress{Moved: len(r.res.Moved), Refused: len(r.res.Refused), Total: r.s.depth})
	}
}

// PurgeDeadLetters deletes the selected dead letters of queue. Purging all
// is one queue.purge of the dead-letter queue, which also takes letters
// that arrive while the command runs; the count says how many went.
func (b *Backend) PurgeDeadLetters(ctx context.Context, queue string, sel admin.DeadLetterSelector) (admin.PurgeResult, error) {
	return b.ops.purgeDeadLetters(ctx, queue, sel)
}

// purgeDeadLetters is Backend.PurgeDeadLetters.
func (o *ops) purgeDeadLetters(ctx context.Context, queue string, sel admin.DeadLetterSelector) (admin.PurgeResult, error) {
	if sel.Empty() {
		return admin.PurgeResult{}, fmt.Errorf("%w: purge of %q", admin.ErrEmptySelector, queue)
	}
	if sel.All && len(sel.IDs) == 0 {
		return o.purgeAll(ctx, queue)
	}
	s, err := o.scanDead(ctx, queue, 0)
	if err != nil {
		return admin.PurgeResult{}, err
	}
	seen := map[string]bool{}
	res := admin.PurgeResult{}
	err = func() error {
		for {
			m, ok, err := s.next(ctx)
			if err != nil || !ok {
				return err
			}
			info := s.letter(m)
			if !sel.Selects(info) {
				s.keep(m)
				continue
			}
			seen[info.ID] = true
			if err := s.take(ctx, m.DeliveryTag); err != nil {
				return err
			}
			res.Purged++
		}
	}()
	res.NotFound = sel.NotFound(seen)
	return res, errors.Join(err, s.close(ctx))
}

func (o *ops) purgeAll(ctx context.Context, queue string) (admin.PurgeResult, error) {
	if o.opts.NoDeadLetterQueues {
		return admin.PurgeResult{}, fmt.Errorf("purge dead letters of %q: %w", queue, errNoDeadLetterQueues)
	}
	if err := o.announceTake(ctx, queue); err != nil {
		return admin.PurgeResult{}, fmt.Errorf("purge: %w", err)
	}
	dead := o.names.Dead(queue).Name
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return admin.PurgeResult{}, fmt.Errorf("purge dead letters of %q: %w", queue, err)
	}
	defer ch.Close()
	n, err := ch.QueuePurge(dead, false)
	if err != nil {
		if isCode(err, amqp.NotFound) {
			return admin.PurgeResult{}, unknownQueue(fmt.Sprintf("purge dead letters of %q", queue), fmt.Sprintf("its dead-letter queue %q does not exist", dead))
		}
		return admin.PurgeResult{}, brokerError(fmt.Sprintf("purge dead letters of %q (%q)", queue, dead), err)
	}
	return admin.PurgeResult{Purged: n}, nil
}

// deadLetterInfo describes message m of the dead-letter queue of queue as
// operators see it. A message that is not a valid envelope is poison,
// known by its message ID or else its admin.PoisonID.
func deadLetterInfo(queue string, m *amqp.Delivery) admin.DeadLetterInfo {
	reason := codec.DeadReason(m.Headers)
	if why, count, ok := codec.BrokerDeath(m.Headers, queue); ok && reason == "" {
		// Dead-lettered by the broker on its own (a quorum queue's
		// delivery limit), not by a worker: the envelope's last error, if
		// any, is not why.
		reason = errs.BrokerDeadLettered(why, count)
	}
	at := codec.DeadAt(m.Headers, queue)
	e, err := codec.Decode(m)
	if err != nil {
		if reason == "" {
			reason = err.Error()
		}
		id := m.MessageId
		if id == "" {
			id = admin.PoisonID(m.Body)
		}
		return admin.DeadLetterInfo{ID: id, Queue: queue, Reason: reason, Poison: true, Body: m.Body, Payload: json.RawMessage("null"), DeadLetteredAt: at}
	}
	if reason == "" {
		reason = e.LastError
	}
	info := admin.DeadLetterInfo{
		ID: e.ID, Queue: queue, Kind: e.Kind, Attempt: e.Attempt, MaxAttempts: e.MaxAttempts,
		Priority: e.Priority, EnqueuedAt: e.EnqueuedAt, Headers: e.Headers,
		Reason: reason, LastError: e.LastError, DeadLetteredAt: at,
	}
	if p, err := admin.PayloadJSON(e.Payload); err != nil {
		info.Payload, info.PayloadError = json.RawMessage("null"), err.Error()
	} else {
		info.Payload = p
	}
	return info
}
