package rabbitmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// notesHandler sends the message of each record whose error says a
// ledger holds no count.
type notesHandler struct{ c chan<- string }

func (h notesHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h notesHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h notesHandler) WithGroup(string) slog.Handler            { return h }
func (h notesHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "error" && strings.Contains(a.Value.String(), "holds no count") {
			select {
			case h.c <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

// TestLimitLedgerHeldMintsNothing: while another connection holds a
// limit's ledger message, a worker that starts finds the ledger empty
// beside an existing token queue and mints nothing, however long it
// waits; once the message is back, it reads the count and still mints
// nothing: the tokens stay N and the ledger one message of N.
func TestLimitLedgerHeldMintsNothing(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n = 3
			q := limitedQueue(t, typ, n, runtime.Rate{})
			first := dialN(t, 1)[0]
			p := acquire(t, first, q, "")
			p.Release()
			reconciled(t, q, first)
			token, ledgerQ := limitNames(q)
			eventually.True(t, wait, func() bool { return ready(t, token) == n }, fmt.Sprintf("token queue holds %d", n))

			// Another connection holds the ledger's message.
			holder := rawChannel(t)
			var held bool
			eventually.True(t, wait, func() bool {
				_, ok, err := holder.Get(ledgerQ, false)
				if err != nil {
					t.Fatalf("hold ledger %q: %v", ledgerQ, err)
				}
				held = ok
				return ok
			}, "the ledger's message held")
			refusals := make(chan string, 16)
			second := dial(t, rabbitmq.Options{Logger: slog.New(notesHandler{refusals})})
			ctx, cancel := context.WithTimeout(ctxT(t), wait)
			defer cancel()
			if p, err := second.AcquirePermit(ctx, q, ""); err == nil {
				p.Release() // a token of the first set: fine, as long as none is minted
			}
			// The second backend's reconcile looks at the empty ledger,
			// and says so.
			select {
			case <-refusals:
			case <-ctx.Done():
				t.Fatal("the second backend never said why it mints nothing")
			}
			if got := ready(t, token); got != n {
				t.Fatalf("with the ledger held elsewhere, token queue holds %d, want %d: a second set was minted", got, n)
			}
			if held {
				if err := holder.Close(); err != nil {
					t.Fatal(err)
				}
			}
			// The count is back: the second backend reads it and mints
			// nothing more.
			reconciled(t, q, second)
			if got := ledger(t, ledgerQ); got != n {
				t.Fatalf("ledger = %d, want %d", got, n)
			}
			if got := ready(t, token); got != n {
				t.Fatalf("token queue holds %d after the ledger came back, want %d", got, n)
			}
		})
	}
}

// TestLimitLedgerTwoCounts: a ledger found holding two counts (its
// holder was killed with the mint lock as another took it) keeps the
// highest and drops the other, minting nothing more.
func TestLimitLedgerTwoCounts(t *testing.T) {
	const n = 3
	q := limitedQueue(t, runtime.QueueClassic, n, runtime.Rate{})
	first := dialN(t, 1)[0]
	acquire(t, first, q, "").Release()
	reconciled(t, q, first)
	token, ledgerQ := limitNames(q)
	eventually.True(t, wait, func() bool { return ready(t, token) == n }, fmt.Sprintf("token queue holds %d", n))
	// An older count beside the ledger's.
	ch := rawChannel(t)
	if err := ch.PublishWithContext(ctxT(t), "", ledgerQ, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	second := dialN(t, 1)[0]
	acquire(t, second, q, "").Release()
	reconciled(t, q, second)
	if got := ledger(t, ledgerQ); got != n { // ledger fails on a second message
		t.Fatalf("ledger = %d, want %d", got, n)
	}
	if got := ready(t, token); got != n {
		t.Fatalf("token queue holds %d, want %d", got, n)
	}
}
