package dashboard

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	resp, err := f.ts.Client().Get(f.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %s", csp, want)
		}
	}
	if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
}

// poison puts a message that is not an envelope on testQueue and lets a
// consumer meet it, which moves it to the dead letters.
func (f *memFixture) poison(t *testing.T, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := f.dead(t)
	if err := runtime.Hooks(hooks.K).PublishRaw(ctx, f.b, testQueue, []byte(body)); err != nil {
		t.Fatal(err)
	}
	sub, err := f.b.Consume(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if n := f.dead(t); n != before+1 {
		t.Fatalf("poison not dead-lettered: %d dead letters, want %d", n, before+1)
	}
}

// TestPoisonLetter shows a poison message's raw body, refuses to re-drive
// it with the reason, and says which asked-for IDs were not found.
func TestPoisonLetter(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.poison(t, "not an envelope <i>at all</i>")
	id := admin.PoisonID([]byte("not an envelope <i>at all</i>"))
	status, body := f.get(t, "/queues/dash.send/dead/"+id)
	if status != 200 {
		t.Fatalf("GET poison letter = %d\n%s", status, body)
	}
	for _, want := range []string{"poison", `<pre id="payload-text">not an envelope &lt;i&gt;at all&lt;/i&gt;</pre>`, `id="payload-hex"`} {
		if !strings.Contains(body, want) {
			t.Errorf("poison letter page lacks %s\n%s", want, body)
		}
	}
	if strings.Contains(body, `id="redrive-one"`) {
		t.Error("poison letter page offers a re-drive")
	}
	form := url.Values{"token": {f.srv.token}, "confirm": {"yes"}, "id": {id, "no-such-id"}}
	status, body = f.post(t, "/queues/dash.send/redrive", form, nil)
	if status != 200 || !strings.Contains(body, "Re-drove 0 dead letters.") {
		t.Fatalf("re-drive of poison = %d\n%s", status, body)
	}
	for _, want := range []string{`id="refused"`, id, "not a valid envelope", `id="not-found"`, "no-such-id"} {
		if !strings.Contains(body, want) {
			t.Errorf("result lacks %s\n%s", want, body)
		}
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("%d dead letters after refusing the poison one, want 1", n)
	}
}

// TestHoldQueuesShown shows a deferred job's hold on its queue's page.
func TestHoldQueuesShown(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := runtime.NewProducerUndeclared(f.b)
	if _, err := runtime.Enqueue(ctx, p, testConfig, job{To: "later@example.com"}); err != nil {
		t.Fatal(err)
	}
	sub, err := f.b.Consume(ctx, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	select {
	case d := <-sub.Deliveries():
		if err := d.Defer(ctx, d.Envelope(), time.Hour); err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("job not delivered")
	}
	status, body := f.get(t, "/queues/dash.send")
	if status != 200 {
		t.Fatalf("GET queue = %d", status)
	}
	if !strings.Contains(body, `<table id="holds">`) || !strings.Contains(body, "<td>deferred</td>") {
		t.Errorf("queue page does not show the deferred hold\n%s", body)
	}
}
