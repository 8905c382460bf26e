package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

// Migrating a queue to other arguments (queuey queues migrate).
//
// The broker cannot change a queue's arguments: the queue is deleted and
// declared again. Its jobs wait meanwhile in the queue "<q>.migrating",
// a classic durable queue whose existence is the marker of a migration
// under way: workers that meet the queue with other arguments wait while it
// exists (Declare), and a producer whose publish to the queue comes back
// unroutable publishes to it instead (Publish). A run cut short leaves it,
// and the next run finishes the move.
//
// For each broker queue that changes (the work queue, and its dead-letter
// queue when that changes too): the queue is paused and its consumers must
// let go; the temporary queue is declared and bound like the queue (the
// delay ladder's delivery binding among them); every message moves to it,
// published with confirms and acked in the queue only once confirmed; the
// queues that dead-letter into the queue (hold queues) are held still, their
// messages taken by a consumer that never acks, so that none expires while
// the queue is gone; a classic queue is sealed (see migrate_seal.go); the
// queue is deleted only if empty (a classic queue; a job enqueued
// meanwhile is moved, and the delete tried again), declared
// with the new arguments and bound again; the hold queues are let go
// (their messages return, and those past their time dead-letter at once
// into the new queue); the temporary queue is unbound, moved back and
// deleted only if empty; the queue is resumed.

// migrateBatch is how many messages a move takes before it waits for
// their confirms and acks them.
const migrateBatch = 256

// migrateRounds bounds how many times a step that found the queue changed
// under it (a job enqueued before a delete, a queue declared by an older
// program) is tried again.
const migrateRounds = 200

// migrateResumeArg, on the temporary queue, says the migration paused the
// queue, so that it resumes it when it ends, whichever run ends it.
const migrateResumeArg = "x-queuey-resume"

// MigrateQueue moves queue q's jobs into q declared with the arguments
// its config gives this backend, losing none (at least once: a job may be
// delivered twice where a move is cut short between a confirm and its
// ack). It refuses, changing nothing, a queue that is not on the broker,
// one that already has these arguments (admin.ErrNothingToMigrate), one
// whose consumers do not let go within opts.PauseTimeout once it is paused,
// and a quorum queue while producers may publish (opts.ProducersStopped).
// It needs the management API, to read arguments and bindings.
func (b *Backend) MigrateQueue(ctx context.Context, q runtime.QueueConfig, opts admin.MigrateOptions) (admin.MigrateResult, error) {
	res := admin.MigrateResult{Queue: q.Name}
	if err := b.life.refuse(fmt.Sprintf("migrate queue %q", q.Name)); err != nil {
		return res, err
	}
	q, d, err := b.resolve(q)
	if err != nil {
		return res, err
	}
	c, err := b.ops.api.client(ctx)
	if err != nil {
		return res, fmt.Errorf("%w: queue %q: its arguments and bindings are read through the management API: %w", admin.ErrCannotMigrate, q.Name, err)
	}
	drift, err := b.drift(ctx, c, q)
	if err != nil {
		return res, fmt.Errorf("%w: queue %q: %w", admin.ErrCannotMigrate, q.Name, err)
	}
	work, dead := b.wanted(q)
	_, deadTemp, err := apiQueue(ctx, c, topology.Migrating(dead.Name))
	if err != nil || dead.Name == "" {
		deadTemp = false
	}
	res.Diffs = drift.Diffs
	res.Resumed = drift.Migrating || deadTemp
	if !drift.Exists && !res.Resumed {
		return res, fmt.Errorf("%w: queue %q is not on the broker; its first declare (a producer or worker) makes it with the arguments its annotation gives", admin.ErrCannotMigrate, q.Name)
	}
	workDiff := slices.ContainsFunc(drift.Diffs, func(x admin.ArgDiff) bool { return x.Queue == work.Name })
	deadDiff := slices.ContainsFunc(drift.Diffs, func(x admin.ArgDiff) bool { return x.Queue == dead.Name && dead.Name != "" })
	if !workDiff && !deadDiff && !res.Resumed {
		return res, fmt.Errorf("%w: queue %q already has the arguments its annotation gives (%s)", admin.ErrNothingToMigrate, q.Name, describeArgs(work.Args))
	}
	// A quorum queue on the broker is deleted whether or not it is empty,
	// and is not sealed: whatever its new arguments, replacing it is safe
	// only with its producers stopped.
	quorum := map[string]bool{}
	for _, x := range []struct {
		do   bool
		name string
	}{{workDiff, work.Name}, {deadDiff, dead.Name}} {
		if !x.do {
			continue
		}
		bq, found, err := apiQueue(ctx, c, x.name)
		if err != nil {
			return res, fmt.Errorf("%w: queue %q: %w", admin.ErrCannotMigrate, x.name, err)
		}
		quorum[x.name] = found && bq.Type == string(runtime.QueueQuorum)
		if quorum[x.name] && !opts.ProducersStopped {
			return res, fmt.Errorf("%w: queue %q is a quorum queue, which the broker deletes whether or not it is empty: a job enqueued between the last move and the delete would be lost. Stop its producers, then run again with --producers-stopped", admin.ErrCannotMigrate, x.name)
		}
	}
	var ladder *topology.Binding
	if l, ok := d.(ladderDelayer); ok {
		bd := l.ladder(q).QueueBinding(q.Name)
		ladder = &bd
	}
	res.Plan = migratePlan(q.Name, work, dead, workDiff || drift.Migrating, deadDiff || deadTemp, ladder, res.Resumed, quorum)
	if opts.DryRun {
		return res, nil
	}
	m := &migration{b: b, c: c, opts: opts}
	if opts.PauseTimeout <= 0 {
		m.opts.PauseTimeout = admin.DefaultPauseTimeout
	}
	resume, err := m.pause(ctx, q.Name, dead.Name, drift.Exists)
	if err != nil {
		return res, err
	}
	if deadDiff || deadTemp {
		n, err := m.one(ctx, dead, nil, false, resume)
		res.Dead = n
		if err != nil {
			return res, err
		}
	}
	if workDiff || drift.Migrating {
		n, err := m.one(ctx, work, ladder, true, resume)
		res.Moved = n
		if err != nil {
			return res, err
		}
	}
	if resume {
		m.step("resume queue %q", q.Name)
		if err := b.ResumeQueue(ctx, q.Name); err != nil {
			return res, fmt.Errorf("migrate queue %q: migrated, but resuming it failed (run queuey queues resume %s): %w", q.Name, q.Name, err)
		}
	}
	return res, nil
}

// migratePlan is the steps of a migration, for a dry run and the record.
func migratePlan(name string, work, dead topology.Queue, doWork, doDead bool, ladder *topology.Binding, resumed bool, quorum map[string]bool) []string {
	var p []string
	if resumed {
		p = append(p, "finish the migration cut short before (its temporary queue exists)")
	}
	p = append(p, fmt.Sprintf("pause queue %q and wait for its workers to let go", name))
	for _, x := range []struct {
		do    bool
		q     topology.Queue
		holds bool
	}{{doDead, dead, false}, {doWork, work, true}} {
		if !x.do {
			continue
		}
		t := topology.Migrating(x.q.Name)
		p = append(p, fmt.Sprintf("declare %q and bind it as %q is bound", t, x.q.Name))
		if x.holds && ladder != nil {
			p = append(p, fmt.Sprintf("bind %q to the ladder's exchange %q with key %q, so that waits ending meanwhile land there", t, ladder.Source, ladder.Key))
		}
		p = append(p, fmt.Sprintf("move every message of %q to %q, each acked once confirmed", x.q.Name, t))
		del := fmt.Sprintf("delete %q (only if empty)", x.q.Name)
		if quorum[x.q.Name] {
			del = fmt.Sprintf("delete %q, a quorum queue, whether or not it is empty (producers stopped)", x.q.Name)
		} else {
			p = append(p, fmt.Sprintf("seal %q with a policy: the broker refuses publishes to it, which go to %q", x.q.Name, t))
		}
		if x.holds {
			p = append(p, fmt.Sprintf("hold still the queues that dead-letter into %q (hold queues), so that none expires while it is gone", x.q.Name))
		}
		p = append(p,
			fmt.Sprintf("%s and declare it with %s, bound as before", del, describeArgs(x.q.Args)))
		if x.holds {
			p = append(p, "let the hold queues go")
		}
		p = append(p, fmt.Sprintf("move every message of %q back to %q and delete %q", t, x.q.Name, t))
	}
	p = append(p, fmt.Sprintf("resume queue %q (unless it was paused before)", name))
	return p
}

// migration is one run of MigrateQueue.
type migration struct {
	b    *Backend
	c    *mgmt.Client
	opts admin.MigrateOptions
}

func (m *migration) step(format string, args ...any) {
	if m.opts.Progress != nil {
		m.opts.Progress(fmt.Sprintf(format, args...))
	}
}

// pause pauses queue, unless it is paused already, and waits for its
// consumers to let go. It reports whether the migration is to resume it:
// when it paused it, or when a run cut short paused it (its temporary
// queue says so).
func (m *migration) pause(ctx context.Context, queue, dead string, exists bool) (resume bool, err error) {
	// The dead-letter queue moves first: a run cut short then left its
	// temporary queue, with the marker, and not the work queue's.
	for _, name := range []string{queue, dead} {
		if name == "" {
			continue
		}
		if t, found, err := apiQueue(ctx, m.c, topology.Migrating(name)); err == nil && found {
			r, _ := t.Arguments[migrateResumeArg].(bool)
			resume = resume || r
		}
	}
	paused, err := m.b.Paused(ctx, queue)
	if err != nil {
		return false, fmt.Errorf("migrate queue %q: %w", queue, err)
	}
	if !paused && !exists {
		// Gone mid-migration: nothing consumes it; the run that
		// deleted it paused it (and its temporary queue says so).
		return resume, nil
	}
	if !paused {
		m.step("pause queue %q", queue)
		if err := m.b.PauseQueue(ctx, queue); err != nil {
			return false, fmt.Errorf("migrate queue %q: %w", queue, err)
		}
		resume = true
	}
	m.step("wait up to %v for the consumers of %q to let go", m.opts.PauseTimeout, queue)
	wctx, cancel := context.WithTimeout(ctx, m.opts.PauseTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	consumers, lastErr := -1, error(nil)
	for {
		st, found, err := inspectQueue(wctx, m.b.life, m.b.ops.conn, queue)
		if err == nil && (!found || st.Consumers == 0) {
			return resume, nil
		}
		if err == nil {
			consumers = st.Consumers
		} else if wctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-tick.C:
			continue
		case <-wctx.Done():
		}
		if resume && !paused {
			_ = m.b.ResumeQueue(context.WithoutCancel(ctx), queue)
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if consumers < 0 {
			return false, fmt.Errorf("migrate queue %q: its consumers could not be counted: %v", queue, lastErr)
		}
		return false, fmt.Errorf("%w: queue %q still has %d consumers %v after it was paused: they do not follow pauses (another program, or a queuey worker older than pausing); stop them, or raise --pause-timeout. Nothing was changed",
			admin.ErrCannotMigrate, queue, consumers, m.opts.PauseTimeout)
	}
}

// one migrates broker queue want (the work queue, or its dead-letter
// queue) to want's arguments, with its temporary queue, and returns how
// many messages went back into it. ladder, when set, is its binding to
// the delay ladder; holds says to hold still the queues that dead-letter
// into it.
func (m *migration) one(ctx context.Context, want topology.Queue, ladder *topology.Binding, holds, resume bool) (int, error) {
	name, temp := want.Name, topology.Migrating(want.Name)
	fail := func(what string, err error) (int, error) {
		return 0, fmt.Errorf("migrate queue %q: %s: %w (run the migration again to finish it; the jobs are in %q and %q)", name, what, err, name, temp)
	}
	m.step("declare %q", temp)
	if err := m.onChannel(ctx, func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(temp, true, false, false, false, nil)
		return err
	}); isNoQueue(err) {
		err = m.onChannel(ctx, func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(temp, true, false, false, false, amqp.Table{topology.ArgQueueType: string(runtime.QueueClassic), migrateResumeArg: resume})
			return err
		})
		if err != nil {
			return fail("declare "+temp, err)
		}
	} else if err != nil {
		return fail("check "+temp, err)
	}
	// A seal left on the temporary queue by a run cut short goes: it
	// takes the jobs of producers again until this run seals it.
	if err := m.c.DeletePolicy(ctx, sealPolicy(temp)); err != nil {
		return fail("lift the seal of "+temp, err)
	}
	routes, err := m.routes(ctx, name, temp, ladder)
	if err != nil {
		return fail("read bindings", err)
	}
	for _, r := range routes {
		m.step("bind %q to exchange %q with key %q", temp, r.Source, r.RoutingKey)
		if err := m.bind(ctx, temp, r, true); err != nil {
			return fail("bind "+temp, err)
		}
	}
	var (
		frozen freezes
		seal   *sealed
	)
	defer func() { frozen.release() }()
	for round := 0; ; round++ {
		if round == migrateRounds {
			return fail("replace the queue", fmt.Errorf("it changed under the migration %d times (a producer declaring it as it was?)", round))
		}
		got, found, err := apiQueue(ctx, m.c, name)
		if err != nil {
			return fail("read "+name, err)
		}
		if found && len(argDiffs(name, got, want.Args)) == 0 {
			break
		}
		if found {
			if holds && frozen == nil {
				f, err := m.freeze(ctx, name, temp)
				if err != nil {
					return fail("hold the hold queues still", err)
				}
				frozen = append(frozen, f)
			}
			quorum := got.Type == string(runtime.QueueQuorum)
			if !quorum && seal == nil {
				if seal, err = m.seal(ctx, name, temp, got.Arguments); err != nil {
					return fail("seal "+name, err)
				}
				if holds {
					// Hold queues declared since the first hold (a
					// delay not seen before) are held too: what they
					// dead-letter into the sealed queue is dropped.
					f, err := m.freeze(ctx, name, temp)
					if err != nil {
						return fail("hold the hold queues still", err)
					}
					frozen = append(frozen, f)
				}
			}
			m.step("move the messages of %q to %q, then delete it", name, temp)
			var n int
			// The delete follows the Get that found the queue empty on
			// the same channel: as little room as can be for a job
			// enqueued in between, which fails the delete of a classic
			// queue (only if empty) and is moved in the next round.
			_, err := m.move(ctx, name, temp, func(ch *amqp.Channel) error {
				var err error
				n, err = ch.QueueDelete(name, !quorum, !quorum, false)
				return err
			})
			switch {
			case isCode(err, amqp.PreconditionFailed):
				continue // enqueued since, or a consumer came: again
			case err != nil:
				return fail("delete "+name, err)
			case n > 0:
				return fail("delete "+name, fmt.Errorf("%d messages were enqueued between the last move and the delete, and were deleted with it: producers were not stopped", n))
			}
		}
		// The seal goes before the queue is declared again, which it
		// would seal too; one left by a run cut short goes as well.
		if err := m.c.DeletePolicy(ctx, sealPolicy(name)); err != nil {
			return fail("lift the seal of "+name, err)
		}
		m.step("declare %q with %s", name, describeArgs(want.Args))
		err = m.onChannel(ctx, func(ch *amqp.Channel) error {
			_, err := ch.QueueDeclare(name, true, false, false, false, want.Args)
			return err
		})
		if isCode(err, amqp.PreconditionFailed) {
			continue // declared meanwhile as it was
		}
		if err != nil {
			return fail("declare "+name, err)
		}
	}
	for _, r := range routes {
		if err := m.bind(ctx, name, r, true); err != nil {
			return fail("bind "+name, err)
		}
	}
	frozen.release()
	frozen = nil
	for _, r := range routes {
		if err := m.bind(ctx, temp, r, false); err != nil {
			return fail("unbind "+temp, err)
		}
	}
	// The temporary queue is sealed too before it is deleted: a producer
	// whose publish came back while the queue was gone may publish to it
	// still. What its seal drops goes to the queue.
	tseal, err := m.seal(ctx, temp, name, nil)
	if err != nil {
		return fail("seal "+temp, err)
	}
	total := tseal.moved
	for round := 0; ; round++ {
		if round == migrateRounds {
			return fail("empty "+temp, fmt.Errorf("jobs kept coming into it %d times", round))
		}
		m.step("move the messages of %q back to %q", temp, name)
		n, err := m.move(ctx, temp, name, func(ch *amqp.Channel) error {
			_, err := ch.QueueDelete(temp, false, true, false)
			return err
		})
		total += n
		if isCode(err, amqp.PreconditionFailed) {
			continue
		}
		if err != nil {
			return fail("delete "+temp, err)
		}
		if err := m.c.DeletePolicy(ctx, sealPolicy(temp)); err != nil {
			return fail("lift the seal of "+temp, err)
		}
		n, err = m.unseal(ctx, name, seal)
		if err != nil {
			return total, fmt.Errorf("migrate queue %q: migrated, but the jobs the seal sent to its dead letters could not be put back (re-drive them: queuey dead retry %s --reason maxlen): %w", name, name, err)
		}
		return total + n, nil
	}
}

// routes returns the bindings into name (or, where it is gone, into temp)
// other than the default exchange's, and ladder's.
func (m *migration) routes(ctx context.Context, name, temp string, ladder *topology.Binding) ([]mgmt.Binding, error) {
	var all []mgmt.Binding
	for _, q := range []string{name, temp} {
		bs, err := m.c.Bindings(ctx, q)
		if err != nil && !errors.Is(err, mgmt.ErrNotFound) {
			return nil, err
		}
		all = append(all, bs...)
	}
	if ladder != nil {
		all = append(all, mgmt.Binding{Source: ladder.Source, RoutingKey: ladder.Key})
	}
	var out []mgmt.Binding
	for _, b := range all {
		if !slices.ContainsFunc(out, func(o mgmt.Binding) bool { return o.Source == b.Source && o.RoutingKey == b.RoutingKey }) {
			out = append(out, b)
		}
	}
	return out, nil
}

// bind binds (or unbinds) queue to r; an exchange that does not exist is
// passed over when binding: nothing routes through it.
func (m *migration) bind(ctx context.Context, queue string, r mgmt.Binding, bind bool) error {
	err := m.onChannel(ctx, func(ch *amqp.Channel) error {
		if bind {
			return ch.QueueBind(queue, r.RoutingKey, r.Source, false, amqp.Table(r.Arguments))
		}
		return ch.QueueUnbind(queue, r.RoutingKey, r.Source, amqp.Table(r.Arguments))
	})
	if isNoQueue(err) || isCode(err, amqp.NotFound) {
		return nil
	}
	return err
}

func (m *migration) onChannel(ctx context.Context, fn func(ch *amqp.Channel) error) error {
	return m.b.ops.onChannel(ctx, func(ch *amqp.Channel) error {
		_, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, fn(ch) }, nil)
		return err
	})
}

// move moves every message of src to dst through the default exchange,
// mandatory and confirmed, acking each in src once dst has it, and returns
// how many it moved. A message dst does not take goes back to src, and
// the move fails. Once src is found empty, then runs on the channel that
// found it so, and its error is returned.
func (m *migration) move(ctx context.Context, src, dst string, then func(ch *amqp.Channel) error) (int, error) {
	get, err := m.b.ops.conn.channel(ctx)
	if err != nil {
		return 0, err
	}
	defer get.Close()
	pub, err := m.b.ops.conn.channel(ctx)
	if err != nil {
		return 0, err
	}
	defer pub.Close()
	if err := pub.Confirm(false); err != nil {
		return 0, err
	}
	returns := pub.NotifyReturn(make(chan amqp.Return, migrateBatch))
	total := 0
	for {
		var (
			confirms []*amqp.DeferredConfirmation
			last     uint64
		)
		for len(confirms) < migrateBatch {
			d, ok, err := get.Get(src, false)
			if err != nil {
				return total, err
			}
			if !ok {
				break
			}
			last = d.DeliveryTag
			dc, err := pub.PublishWithDeferredConfirmWithContext(ctx, "", dst, true, false, republished(&d))
			if err != nil {
				_ = get.Nack(last, true, true)
				return total, err
			}
			confirms = append(confirms, dc)
		}
		if len(confirms) == 0 {
			return total, then(get)
		}
		for _, dc := range confirms {
			ok, err := dc.WaitContext(ctx)
			if err == nil && !ok {
				err = fmt.Errorf("%w: %q", ErrNacked, dst)
			}
			if err != nil {
				_ = get.Nack(last, true, true)
				return total, err
			}
		}
		select {
		case r := <-returns:
			_ = get.Nack(last, true, true)
			return total, fmt.Errorf("%w: %q returned a message: %d %s", ErrUnroutable, dst, r.ReplyCode, r.ReplyText)
		default:
		}
		if err := get.Ack(last, true); err != nil {
			return total, err
		}
		total += len(confirms)
	}
}

// republished is d as it is published again: every property kept.
func republished(d *amqp.Delivery) amqp.Publishing {
	return amqp.Publishing{
		Headers: d.Headers, ContentType: d.ContentType, ContentEncoding: d.ContentEncoding,
		DeliveryMode: d.DeliveryMode, Priority: d.Priority, CorrelationId: d.CorrelationId,
		ReplyTo: d.ReplyTo, Expiration: d.Expiration, MessageId: d.MessageId, Timestamp: d.Timestamp,
		Type: d.Type, UserId: d.UserId, AppId: d.AppId, Body: d.Body,
	}
}

// freeze holds the messages of the queues that dead-letter into a queue,
// taken by a consumer that never acks them: a message delivered is not
// expired, so none dead-letters while the queue is gone. Releasing it
// closes the channel, and the broker puts them back, each keeping its
// expiry.
type freeze struct {
	ch   *amqp.Channel
	done chan struct{}
}

// freezes are the holds of one migration.
type freezes []*freeze

func (fs freezes) release() {
	for _, f := range fs {
		f.release()
	}
}

func (f *freeze) release() {
	if f == nil {
		return
	}
	_ = f.ch.Close()
	<-f.done
}

// freeze holds still every queue that dead-letters into name through the
// default exchange (its hold queues, and any other), but temp, and
// returns once each has none ready. A hold queue that expires between the
// listing and its consumer (it was empty) makes it start again.
func (m *migration) freeze(ctx context.Context, name, temp string) (*freeze, error) {
	for try := 0; ; try++ {
		f, gone, err := m.freezeOnce(ctx, name, temp)
		if !gone {
			return f, err
		}
		if try == migrateRounds {
			return nil, fmt.Errorf("the queues that dead-letter into %q kept going away as they were held, %d times", name, try+1)
		}
	}
}

func (m *migration) freezeOnce(ctx context.Context, name, temp string) (_ *freeze, gone bool, _ error) {
	qs, err := m.c.Queues(ctx)
	if err != nil {
		return nil, false, err
	}
	var sources []string
	for _, q := range qs {
		dlx, has := q.Arguments[topology.ArgDeadLetterExchange].(string)
		key, _ := q.Arguments[topology.ArgDeadLetterRoutingKey].(string)
		if has && dlx == "" && key == name && q.Name != temp {
			sources = append(sources, q.Name)
		}
	}
	ch, err := m.b.ops.conn.channel(ctx)
	if err != nil {
		return nil, false, err
	}
	f := &freeze{ch: ch, done: make(chan struct{})}
	closed := ch.NotifyClose(make(chan *amqp.Error, 1))
	var taking []<-chan amqp.Delivery
	for _, s := range sources {
		m.step("hold %q still", s)
		ds, err := ch.Consume(s, "", false, false, false, false, nil)
		if err != nil {
			_ = ch.Close()
			if isNoQueue(err) {
				return nil, true, nil
			}
			return nil, false, fmt.Errorf("consume %q: %w", s, err)
		}
		taking = append(taking, ds)
	}
	for _, ds := range taking {
		go func() {
			for range ds { // held, never acked, until the channel closes
			}
		}()
	}
	go func() {
		defer close(f.done)
		<-closed
	}()
	for _, s := range sources {
		for {
			st, found, err := inspectQueue(ctx, m.b.life, m.b.ops.conn, s)
			if err != nil {
				f.release()
				return nil, false, err
			}
			if !found || st.Messages == 0 {
				break
			}
			select {
			case <-ctx.Done():
				f.release()
				return nil, false, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	return f, false, nil
}
