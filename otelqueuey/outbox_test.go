package otelqueuey_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/otelqueuey"
)

// fakeOutbox is an admin.OutboxReader of fixed stats, or of err.
type fakeOutbox struct {
	stats admin.OutboxStats
	err   error
	reads atomic.Int64
}

func (f *fakeOutbox) OutboxStats(context.Context) (admin.OutboxStats, error) {
	f.reads.Add(1)
	return f.stats, f.err
}

// TestOutboxGauges: with Config.Outbox, each collection reads the outbox
// once and reports its pending, retrying and dead rows and its oldest
// row's age by queue, served to Prometheus under their conventional
// names; a read that fails leaves the gauges out, and Close stops the
// reads.
func TestOutboxGauges(t *testing.T) {
	ob := &fakeOutbox{stats: admin.OutboxStats{Queues: []admin.OutboxQueueStats{
		{Queue: "emails", Kind: "emails.SendEmail", Pending: 7, Retrying: 2, OldestAge: 1500 * time.Millisecond, Dead: 3},
		{Queue: "late", Kind: "late.Job", Pending: 1, Retrying: 1, OldestAge: time.Minute},
	}}}
	mp, handler, err := otelqueuey.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	tel := newTelemetry(t, otelqueuey.Config{MeterProvider: mp, Outbox: ob})

	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`queuey_outbox_pending{kind="emails.SendEmail",queue="emails"} 7`,
		`queuey_outbox_retrying{kind="emails.SendEmail",queue="emails"} 2`,
		`queuey_outbox_dead{kind="emails.SendEmail",queue="emails"} 3`,
		`queuey_outbox_oldest_age_seconds{kind="emails.SendEmail",queue="emails"} 1.5`,
		`queuey_outbox_pending{kind="late.Job",queue="late"} 1`,
		`queuey_outbox_oldest_age_seconds{kind="late.Job",queue="late"} 60`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s:\n%s", want, body)
		}
	}
	if n := ob.reads.Load(); n != 1 {
		t.Errorf("%d reads of the outbox for one scrape, want 1", n)
	}

	ob.err = errors.New("database away")
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if body, _ := io.ReadAll(rec.Body); rec.Code != 200 || strings.Contains(string(body), "queuey_outbox_pending") {
		t.Errorf("scrape with the outbox unreadable: status %d, body %s; want 200 without outbox gauges", rec.Code, body)
	}

	if err := tel.inst.Close(); err != nil {
		t.Fatal(err)
	}
	before := ob.reads.Load()
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/metrics", nil))
	if n := ob.reads.Load(); n != before {
		t.Errorf("the outbox read %d more times after Close, want none", n-before)
	}
}
