package rabbitmq

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
)

// publisher publishes over a pool of confirm-mode channels, each with many
// publishes in flight. Every publish waits for its confirm, and every one but
// a plugin wait is mandatory.
type publisher struct {
	conn    *connection
	log     *slog.Logger
	maxBody int // the broker's max message size (Options.MaxMessageSize)
	slots   []*slot
	next    atomic.Uint32
	// waits carry plugin waits, apart from every other publish: a wait to
	// a delay exchange that is gone makes the broker close its channel
	// (404), failing whatever else is in flight on it.
	waits    []*slot
	nextWait atomic.Uint32
	// ladder carries ladder waits, apart from enqueues for the same
	// reason, and apart from hold and plugin waits, which want many
	// channels (waitChannels).
	ladder []*slot
}

func newPublisher(conn *connection, channels, maxBody int, log *slog.Logger) *publisher {
	p := &publisher{conn: conn, log: log, maxBody: maxBody}
	for range channels {
		p.slots = append(p.slots, newSlot())
	}
	for range waitChannels {
		p.waits = append(p.waits, newSlot())
	}
	for range ladderChannels {
		p.ladder = append(p.ladder, newSlot())
	}
	return p
}

// slot holds one confirm channel and replaces it once it has died.
type slot struct {
	cur atomic.Pointer[pubChannel] // the channel; read on every publish
	// opening is held while a channel is opened: a channel of one, so
	// that a publish waiting for it stops when its context ends.
	opening chan struct{}
}

func newSlot() *slot { return &slot{opening: make(chan struct{}, 1)} }

func (s *slot) get(ctx context.Context, p *publisher) (*pubChannel, error) {
	if pc := s.cur.Load(); pc != nil && !pc.dead.Load() {
		return pc, nil
	}
	select {
	case s.opening <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("rabbitmq: waiting for a publishing channel: %w", ctx.Err())
	}
	defer func() { <-s.opening }()
	if pc := s.cur.Load(); pc != nil && !pc.dead.Load() {
		return pc, nil
	}
	ch, conn, err := p.conn.channelConn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, ch.Confirm(false) }, nil); err != nil {
		go ch.Close() // may wait on a broker that stopped answering
		return nil, p.conn.blockedError(ctx, brokerError("rabbitmq: put channel in confirm mode", err))
	}
	pc := newPubChannel(ch, p.conn, p.log)
	pc.sock = p.conn.sock(conn)
	pc.limits = p.limitsOn(conn)
	s.cur.Store(pc)
	return pc, nil
}

// limitsOn are what the broker takes in one publish on conn: its
// negotiated frame_max, and the max message size.
func (p *publisher) limitsOn(conn *amqp.Connection) codec.Limits {
	return codec.Limits{FrameMax: conn.Config.FrameSize, MaxBody: p.maxBody}
}

// limits are what the broker takes in one publish on the live publishing
// connection (see connection.frameMax), with room kept for every header
// the publish path may add to a message: the pairing header (seqHeader)
// and a plugin wait's delay. A message made to fit them fits whichever
// way it is published.
func (p *publisher) limits() codec.Limits {
	return codec.Limits{FrameMax: p.conn.frameMax(), MaxBody: p.maxBody, Reserve: addedHeadersRoom}
}

// addedHeadersRoom is the most that the publish path adds to a message's
// content header: the pairing header, a plugin wait's x-delay or a ladder
// wait's BCC (never both), and the table's length when the message had no
// headers.
var addedHeadersRoom = seqHeaderRoom + max(codec.EntrySize(plugin.HeaderDelay, int32(0)), ladderBCCRoom)

// ladderBCCRoom is the size of a ladder wait's BCC header, at its longest
// enter key: two digits and "h" (topology.Ladder.EnterKey).
var ladderBCCRoom = codec.EntrySize(headerBCC, []any{"00h"})

// publish publishes msg to the default exchange with routing key key,
// mandatory, on the next channel of the pool, and returns once the broker
// confirmed it: nil for an ack, an error wrapping ErrUnroutable for a
// return, ErrNacked for a nack and ErrNotConfirmed when the channel died
// first. msg.Headers, when not nil, must be a map the caller owns: a
// header may be added to it.
func (p *publisher) publish(ctx context.Context, key string, msg amqp.Publishing) error {
	return p.send(ctx, "", key, true, msg)
}

// send is publish to any exchange, mandatory or not: a publish that no
// queue needs to receive (a notice on a fanout exchange) is not mandatory.
func (p *publisher) send(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	pc, err := p.slots[int(p.next.Add(1))%len(p.slots)].get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, mandatory)
}

// awaitLoops waits for every channel's return loop to end; the connection must
// be closed first.
func (p *publisher) awaitLoops() {
	for _, s := range slices.Concat(p.slots, p.waits, p.ladder) {
		if pc := s.cur.Load(); pc != nil {
			<-pc.done
		}
	}
}
