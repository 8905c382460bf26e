package dashboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
)

// outboxReader is an admin.OutboxReader of fixed stats, or of err.
type outboxReader struct {
	stats admin.OutboxStats
	err   error
}

func (o outboxReader) OutboxStats(context.Context) (admin.OutboxStats, error) { return o.stats, o.err }

// TestOutboxPanel: with Options.Outbox the overview shows the outbox's
// backlog and dead rows by queue, escaping what it prints; an outbox that
// cannot be read is said so on the page, which is served all the same;
// without one there is no panel.
func TestOutboxPanel(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	st := admin.OutboxStats{Pending: 9, Retrying: 2, OldestAge: 95 * time.Second, Dead: 4, Queues: []admin.OutboxQueueStats{
		{Queue: "emails", Pending: 7, OldestAge: 95 * time.Second, Dead: 4},
		{Queue: "late", Pending: 2, Retrying: 2, OldestAge: 3 * time.Second, LastError: `queue "late" does not exist <script>`},
	}}
	rec := serve(t, f.b, Options{Outbox: outboxReader{stats: st}}, "/")
	body := rec.Body.String()
	for _, want := range []string{
		`id="outbox"`, "9 pending (2 retrying), oldest 1m35s", "4 dead",
		`data-outbox-queue="late"`, "does not exist &lt;script&gt;", "queuey outbox dead retry",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, body)
		}
	}
	if rec.Code != 200 || strings.Contains(body, "<script>") {
		t.Errorf("GET / = %d with an unescaped error", rec.Code)
	}

	rec = serve(t, f.b, Options{Outbox: outboxReader{err: errors.New("connection refused")}}, "/")
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "The outbox could not be read: connection refused") || !strings.Contains(body, `id="queues"`) {
		t.Errorf("GET / with the outbox away = %d:\n%s", rec.Code, body)
	}
	if body := serve(t, f.b, Options{}, "/").Body.String(); strings.Contains(body, `id="outbox"`) {
		t.Errorf("overview without an outbox shows its panel")
	}
}
