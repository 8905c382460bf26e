package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// TestDriftShownRabbitMQ: a queue's page names every argument in which
// the broker's queue differs from its configuration, read at each view:
// once the queue is migrated, the same server shows none.
func TestDriftShownRabbitMQ(t *testing.T) {
	u := brokertest.Require(t)
	cfg := rabbitQueue(t, u)
	cfg.MaxPriority = 3
	b := dialRabbit(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := runtime.NewProducer(ctx, b, cfg); err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.MaxPriority = 8
	srv, err := New(b, Options{Configs: []runtime.QueueConfig{want}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	page := func() string {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/queues/"+url.PathEscape(cfg.Name), nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET queue page = %d\n%s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	body := page()
	for _, s := range []string{`id="drift-args"`, "<td class=\"mono\">x-max-priority</td><td>3</td><td>8</td>", "queuey queues migrate " + cfg.Name} {
		if !strings.Contains(body, s) {
			t.Errorf("queue page lacks %q", s)
		}
	}
	if _, err := b.MigrateQueue(ctx, want, admin.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	if body := page(); strings.Contains(body, `id="drift`) {
		t.Errorf("after the migration the page still shows a difference")
	}
}
