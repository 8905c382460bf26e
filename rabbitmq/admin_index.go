package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
)

// An index of a classic dead-letter queue (Options.DeadLetterIndex).
//
// A deep read of a dead-letter queue costs a transfer of every letter
// from its head to the last one it needs, and the broker, not the
// reader, sets the pace. An index is one read of the whole queue, each
// letter kept in memory in its order with its position by ID; later deep
// reads use it instead of the queue for as long as it is still true.
//
// It stays true as long as no letter has left the queue since it was
// made. Letters never move: a letter read and given back goes back to its
// place, and letters that arrive go after those indexed, past what the
// index answers for. Whether any left is known from two things:
//
//   - Letters that queuey takes (a re-drive, a purge, a delete of the
//     queue with its waits, from any backend in any process): before the
//     first one goes, the taker publishes the notice "dead <queue>" to the
//     control exchange, confirmed, while it holds the dead-letter queue's
//     exclusive consumer. A backend that keeps indexes binds a queue of its
//     own to that exchange before it makes its first index. Before every
//     use of an index it gets every notice waiting there (basic.get: a
//     confirmed notice is there to get) and forgets the indexes named. A
//     notice waiting when an index is made, which the index holds the
//     queue after, is dropped then. Losing the binding (its connection)
//     forgets every index, since notices may have gone with it.
//   - Letters that anyone else takes: an AMQP consumer takes from the head
//     and a purge takes all, so the queue must still hold at least as many
//     letters as indexed, and its first must be the index's first (read
//     with an exclusive consumer and given back). A tool other than
//     queuey that takes letters from the middle of the queue while others
//     arrive can go unseen; the index is then out of date until queuey
//     next takes a letter of that queue.
//
// A read the index cannot answer (an ID it does not hold, a page past its
// end while letters arrived after it) makes it again. A quorum
// dead-letter queue, which every read copies whole, is never indexed.

// deadNotice is the verb of a notice that letters are about to leave a
// dead-letter queue.
const deadNotice = "dead"

// deadIndex holds a backend's indexes of dead-letter queues.
type deadIndex struct {
	mu      sync.Mutex              // one use or making at a time
	ch      *amqp.Channel           // where notices are got; nil until bound
	notices string                  // the queue of notices
	byQueue map[string]*deadLetters // by logical queue
}

// deadLetters is the index of one dead-letter queue.
type deadLetters struct {
	letters []amqp.Delivery // in queue order, with no acknowledger
	at      map[string]int  // index in letters, by letter ID
}

// letterID is the ID a dead letter is shown and found by (see
// admin.DeadLetterInfo.ID), read without decoding its body: the message ID,
// which is the job's ID, or for a poison letter without one its PoisonID.
func letterID(m *amqp.Delivery) string {
	if m.MessageId != "" {
		return m.MessageId
	}
	return admin.PoisonID(m.Body)
}

// bindIndex binds the queue of notices, unless bound. x.mu is held.
func (o *ops) bindIndex(ctx context.Context) error {
	x := &o.index
	if x.ch != nil && !x.ch.IsClosed() {
		return nil
	}
	x.forget()
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return err
	}
	err = ch.ExchangeDeclare(controlExchange, amqp.ExchangeFanout, true, false, false, false, nil)
	var q amqp.Queue
	if err == nil {
		q, err = ch.QueueDeclare("", false, true, true, false, nil)
	}
	if err == nil {
		err = ch.QueueBind(q.Name, "", controlExchange, false, nil)
	}
	if err != nil {
		_ = ch.Close()
		return brokerError(fmt.Sprintf("index dead letters: bind to %q", controlExchange), err)
	}
	x.ch, x.notices, x.byQueue = ch, q.Name, map[string]*deadLetters{}
	return nil
}

// forget drops every index and the binding. x.mu is held.
func (x *deadIndex) forget() {
	if x.ch != nil {
		_ = x.ch.Close()
	}
	x.ch, x.byQueue = nil, nil
}

// drainIndex gets every notice waiting and forgets the indexes they name.
// x.mu is held.
func (o *ops) drainIndex(ctx context.Context) error {
	x := &o.index
	if err := o.bindIndex(ctx); err != nil {
		return err
	}
	for ctx.Err() == nil {
		d, ok, err := x.ch.Get(x.notices, true)
		if err != nil {
			x.forget()
			return brokerError("index dead letters: read notices", err)
		}
		if !ok {
			return nil
		}
		if verb, queue, _ := strings.Cut(string(d.Body), " "); verb == deadNotice {
			delete(x.byQueue, queue)
		}
	}
	return ctx.Err()
}

// currentIndex returns queue's index when it is still true, and how many
// letters the queue holds. x.mu is held.
func (o *ops) currentIndex(ctx context.Context, queue string) (*deadLetters, int, bool) {
	x := &o.index
	if x.byQueue[queue] == nil {
		return nil, 0, false
	}
	if err := o.drainIndex(ctx); err != nil {
		return nil, 0, false
	}
	idx := x.byQueue[queue]
	if idx == nil {
		return nil, 0, false
	}
	n, head, ok := o.peekDead(ctx, queue)
	if !ok {
		return nil, 0, false
	}
	if n < len(idx.letters) || head != letterID(&idx.letters[0]) {
		delete(x.byQueue, queue)
		return nil, 0, false
	}
	return idx, n, true
}

// peekDead returns how many letters queue's dead-letter queue holds and
// the ID of its first, which it reads with an exclusive consumer and gives
// back in place. It is false when the queue is missing, empty or being
// read by someone else.
func (o *ops) peekDead(ctx context.Context, queue string) (int, string, bool) {
	dead := o.names.Dead(queue).Name
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return 0, "", false
	}
	defer ch.Close() // gives the letter back, if the nack did not
	q, err := ch.QueueDeclarePassive(dead, true, false, false, false, nil)
	if err != nil || q.Consumers > 0 || q.Messages == 0 {
		return 0, "", false
	}
	if err := ch.Qos(1, 0, false); err != nil {
		return 0, "", false
	}
	d, err := ch.Consume(dead, "", false, true, false, false, nil)
	if err != nil {
		return 0, "", false
	}
	idle := time.NewTimer(scanIdle)
	defer idle.Stop()
	select {
	case m, ok := <-d:
		if !ok {
			return 0, "", false
		}
		_ = ch.Nack(m.DeliveryTag, false, true)
		return q.Messages, letterID(&m), true
	case <-idle.C:
	case <-ctx.Done():
	}
	return 0, "", false
}

// errNotIndexed says a dead-letter queue is not indexed: it is not
// classic.
var errNotIndexed = errors.New("dead-letter queue not indexed")

// makeIndex reads the whole of queue's dead-letter queue, keeping every
// letter in place, and makes its index. x.mu is held.
func (o *ops) makeIndex(ctx context.Context, queue string) (*deadLetters, error) {
	x := &o.index
	delete(x.byQueue, queue)
	if err := o.bindIndex(ctx); err != nil {
		return nil, err
	}
	classic, err := o.isClassic(ctx, o.names.Dead(queue).Name)
	if err != nil {
		return nil, fmt.Errorf("dead letters of %q: %w", queue, err)
	}
	if !classic {
		return nil, errNotIndexed
	}
	s, err := o.scanDead(ctx, queue, 0)
	if err != nil {
		return nil, err
	}
	idx, err := func() (*deadLetters, error) {
		if s.keeper != nil { // found quorum since
			return nil, errNotIndexed
		}
		// The notices waiting now were sent by takers that let the queue
		// go before this read held it: the letters they took are gone.
		if err := o.drainIndex(ctx); err != nil {
			return nil, err
		}
		idx := &deadLetters{letters: make([]amqp.Delivery, 0, s.want), at: make(map[string]int, s.want)}
		for {
			m, ok, err := s.next(ctx)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			s.keep(m)
			c := *m
			c.Acknowledger = nil
			if _, dup := idx.at[letterID(&c)]; !dup {
				idx.at[letterID(&c)] = len(idx.letters)
			}
			idx.letters = append(idx.letters, c)
		}
		return idx, nil
	}()
	if err := errors.Join(err, s.close(ctx)); err != nil {
		return nil, err
	}
	if len(idx.letters) > 0 && !s.dry && x.byQueue != nil {
		x.byQueue[queue] = idx
	}
	return idx, nil
}

// indexedPage answers DeadLetters from queue's index, made first when
// there is none still true. It is false when the queue is not indexed.
func (o *ops) indexedPage(ctx context.Context, queue, after string, limit int) (admin.DeadLetterList, bool, error) {
	x := &o.index
	x.mu.Lock()
	defer x.mu.Unlock()
	idx, total, ok := o.currentIndex(ctx, queue)
	for fresh := false; ; fresh = true {
		if !ok {
			var err error
			if idx, err = o.makeIndex(ctx, queue); err != nil {
				if errors.Is(err, errNotIndexed) {
					return admin.DeadLetterList{}, false, nil
				}
				return admin.DeadLetterList{}, true, err
			}
			total, fresh = len(idx.letters), true
		}
		i, found := idx.at[after]
		end := min(i+1+limit, len(idx.letters))
		switch {
		case !found && fresh:
			return admin.DeadLetterList{}, true, fmt.Errorf("%w: queue %q has no dead letter %q to page after (re-driven or purged since?)", admin.ErrDeadLetterNotFound, queue, after)
		case found && (end-i-1 == limit || total == len(idx.letters)):
			list := admin.DeadLetterList{Letters: make([]admin.DeadLetterInfo, 0, end-i-1), Total: total}
			for j := i + 1; j < end; j++ {
				list.Letters = append(list.Letters, deadLetterInfo(queue, &idx.letters[j]))
			}
			if len(list.Letters) == limit && end < total {
				list.Next = admin.Cursor(end, list.Letters[limit-1].ID)
			}
			return list, true, nil
		}
		ok = false // a letter it does not hold, or letters past its end
	}
}

// indexedLetter answers DeadLetter from queue's index, made first when
// there is none still true or it lacks id. It is false when the queue is
// not indexed.
func (o *ops) indexedLetter(ctx context.Context, queue, id string) (admin.DeadLetterInfo, bool, error) {
	x := &o.index
	x.mu.Lock()
	defer x.mu.Unlock()
	idx, _, ok := o.currentIndex(ctx, queue)
	if ok {
		if i, found := idx.at[id]; found {
			return deadLetterInfo(queue, &idx.letters[i]), true, nil
		}
	}
	idx, err := o.makeIndex(ctx, queue)
	if err != nil {
		if errors.Is(err, errNotIndexed) {
			return admin.DeadLetterInfo{}, false, nil
		}
		return admin.DeadLetterInfo{}, true, err
	}
	if i, found := idx.at[id]; found {
		return deadLetterInfo(queue, &idx.letters[i]), true, nil
	}
	return admin.DeadLetterInfo{}, true, fmt.Errorf("%w: queue %q has no dead letter %q", admin.ErrDeadLetterNotFound, queue, id)
}

// announceTake tells every backend that keeps an index of queue's dead
// letters that letters are about to leave it (see deadIndex). With no
// control exchange, no backend is bound to hear it, and none needs to.
func (o *ops) announceTake(ctx context.Context, queue string) error {
	ch, err := o.conn.channel(ctx)
	if err != nil {
		return fmt.Errorf("dead letters of %q: %w", queue, err)
	}
	err = ch.ExchangeDeclarePassive(controlExchange, amqp.ExchangeFanout, true, false, false, false, nil)
	_ = ch.Close()
	switch {
	case isCode(err, amqp.NotFound):
		return nil
	case err != nil:
		return brokerError(fmt.Sprintf("dead letters of %q: look for %q", queue, controlExchange), err)
	}
	msg := amqp.Publishing{Headers: amqp.Table{}, Body: []byte(deadNotice + " " + queue)}
	if err := o.pub.send(ctx, controlExchange, "", false, msg); err != nil {
		return fmt.Errorf("dead letters of %q: tell the readers that index them that letters leave (none has left): %w", queue, err)
	}
	return nil
}
