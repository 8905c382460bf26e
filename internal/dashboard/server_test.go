package dashboard

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

var (
	letterLink = regexp.MustCompile(`href="/queues/[^/"]+/dead/([^"]+)"`)
	nextLink   = regexp.MustCompile(`id="next" href="([^"]+)"`)
)

func TestOverviewListsQueues(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a@example.com"}, job{To: "b@example.com"})
	status, body := f.get(t, "/")
	if status != 200 {
		t.Fatalf("GET / = %d\n%s", status, body)
	}
	for _, want := range []string{`data-queue="dash.send"`, `href="/queues/dash.send"`, `data-f="dead">2<`, `id="depth-chart"`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s\n%s", want, body)
		}
	}
}

func TestStatsJSON(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a@example.com"})
	status, body := f.get(t, "/api/stats")
	if status != 200 {
		t.Fatalf("GET /api/stats = %d\n%s", status, body)
	}
	for _, want := range []string{`"queue":"dash.send"`, `"dead":1`, `"samples":[{`} {
		if !strings.Contains(body, want) {
			t.Errorf("stats lack %s\n%s", want, body)
		}
	}
}

func TestQueueAndLetterPages(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	ids := f.kill(t, "smtp: 550 mailbox does not exist", job{To: "a@example.com", Note: "hello"})
	status, body := f.get(t, "/queues/dash.send")
	if status != 200 {
		t.Fatalf("GET queue = %d\n%s", status, body)
	}
	for _, want := range []string{ids[0], "550 mailbox does not exist", `id="config"`, "max_attempts</th><td>3<", `id="redrive-all"`} {
		if !strings.Contains(body, want) {
			t.Errorf("queue page lacks %s\n%s", want, body)
		}
	}
	status, body = f.get(t, "/queues/dash.send/dead/"+ids[0])
	if status != 200 {
		t.Fatalf("GET letter = %d\n%s", status, body)
	}
	for _, want := range []string{"&#34;To&#34;: &#34;a@example.com&#34;", "attempt</th><td>1 of 3", `id="redrive-one"`} {
		if !strings.Contains(body, want) {
			t.Errorf("letter page lacks %s\n%s", want, body)
		}
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	for _, path := range []string{"/queues/nope", "/queues/dash.send/dead/nope", "/nope"} {
		if status, body := f.get(t, path); status != 404 {
			t.Errorf("GET %s = %d, want 404\n%s", path, status, body)
		}
	}
}

// TestEscaping shows that markup in a payload, a reason and a queue's
// letters renders as text on every page.
func TestEscaping(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ids := f.kill(t, `<img src=x onerror=alert(1)>`, job{To: `<script>alert("x")</script>`})
	for _, path := range []string{"/queues/dash.send", "/queues/dash.send/dead/" + ids[0]} {
		status, body := f.get(t, path)
		if status != 200 {
			t.Fatalf("GET %s = %d", path, status)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s holds unescaped markup:\n%s", path, body)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;") {
			t.Errorf("%s does not show the reason as text:\n%s", path, body)
		}
	}
	_, body := f.get(t, "/queues/dash.send/dead/"+ids[0])
	if !strings.Contains(body, `&lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;`) {
		t.Errorf("letter page does not show the payload as text:\n%s", body)
	}
}

func TestBrokerPasswordHidden(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{Broker: "amqp://ops:s3cret-pw@rabbit.internal:5672/prod"})
	_, body := f.get(t, "/")
	if strings.Contains(body, "s3cret-pw") {
		t.Fatalf("page shows the broker password:\n%s", body)
	}
	if !strings.Contains(body, "amqp://ops:xxxxx@rabbit.internal:5672/prod") {
		t.Errorf("page does not show the redacted broker URL:\n%s", body)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"amqp://guest:guest@mq.example:5672/": "amqp://guest:xxxxx@mq.example:5672/",
		"amqp://127.0.0.1/":                   "amqp://127.0.0.1/",
		"amqp://u:p%zz@h/":                    "(unparsable URL)",
		"":                                    "",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRedriveConfirmsThenActs shows that a re-drive first only asks, and
// moves the letter back to the queue once confirmed.
func TestRedriveConfirmsThenActs(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ids := f.kill(t, "boom", job{To: "a@example.com"}, job{To: "b@example.com"})
	form := url.Values{"token": {f.srv.token}, "id": {ids[1]}}
	status, body := f.post(t, "/queues/dash.send/redrive", form, nil)
	if status != 200 || !strings.Contains(body, `id="confirm"`) || !strings.Contains(body, ids[1]) {
		t.Fatalf("unconfirmed POST = %d, want a confirmation page naming %s\n%s", status, ids[1], body)
	}
	if n := f.dead(t); n != 2 {
		t.Fatalf("after the confirmation page %d dead letters, want 2: nothing may change before confirming", n)
	}
	form.Set("confirm", "yes")
	status, body = f.post(t, "/queues/dash.send/redrive", form, nil)
	if status != 200 || !strings.Contains(body, "Re-drove 1 dead letter.") {
		t.Fatalf("confirmed POST = %d, want the result\n%s", status, body)
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("after the re-drive %d dead letters, want 1", n)
	}
	if n, err := f.b.Ready(context.Background(), testQueue); err != nil || n != 1 {
		t.Errorf("after the re-drive %d jobs ready (%v), want 1", n, err)
	}
}

func TestPurgeAll(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a@example.com"}, job{To: "b@example.com"}, job{To: "c@example.com"})
	form := url.Values{"token": {f.srv.token}, "all": {"yes"}}
	status, body := f.post(t, "/queues/dash.send/purge", form, nil)
	if status != 200 || !strings.Contains(body, "All dead letters of this queue (3 dead letters now)") {
		t.Fatalf("unconfirmed purge = %d\n%s", status, body)
	}
	form.Set("confirm", "yes")
	status, body = f.post(t, "/queues/dash.send/purge", form, nil)
	if status != 200 || !strings.Contains(body, "Purged 3 dead letters.") {
		t.Fatalf("confirmed purge = %d\n%s", status, body)
	}
	if n := f.dead(t); n != 0 {
		t.Errorf("after purge %d dead letters, want 0", n)
	}
}

func TestBadSelection(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ids := f.kill(t, "boom", job{To: "a@example.com"})
	for name, form := range map[string]url.Values{
		"nothing":       {"token": {f.srv.token}, "confirm": {"yes"}},
		"both":          {"token": {f.srv.token}, "confirm": {"yes"}, "all": {"yes"}, "id": {ids[0]}},
		"reason and id": {"token": {f.srv.token}, "confirm": {"yes"}, "reason": {"boom"}, "id": {ids[0]}},
		"kind and all":  {"token": {f.srv.token}, "confirm": {"yes"}, "kind": {"x"}, "all": {"yes"}},
	} {
		if status, body := f.post(t, "/queues/dash.send/purge", form, nil); status != 400 {
			t.Errorf("%s: POST = %d, want 400\n%s", name, status, body)
		}
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("%d dead letters, want 1", n)
	}
}

// TestCSRFRefused shows that a POST without this server's token, or from
// another origin even with it, changes nothing.
func TestCSRFRefused(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a@example.com"})
	confirmed := url.Values{"all": {"yes"}, "confirm": {"yes"}}
	withToken := url.Values{"token": {f.srv.token}, "all": {"yes"}, "confirm": {"yes"}}
	wrongToken := url.Values{"token": {strings.Repeat("0", 64)}, "all": {"yes"}, "confirm": {"yes"}}
	cases := []struct {
		name    string
		form    url.Values
		headers map[string]string
	}{
		{"no token", confirmed, nil},
		{"wrong token", wrongToken, nil},
		{"cross-site fetch", withToken, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"foreign origin", withToken, map[string]string{"Sec-Fetch-Site": "", "Origin": "http://evil.example"}},
	}
	for _, c := range cases {
		for _, path := range []string{"/queues/dash.send/purge", "/queues/dash.send/redrive", "/queues/dash.send/pause", "/queues/dash.send/resume"} {
			status, body := f.post(t, path, c.form, c.headers)
			if status != 403 || !strings.Contains(body, "refused") {
				t.Errorf("%s: POST %s = %d, want 403 refused\n%s", c.name, path, status, body)
			}
		}
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("after refused POSTs %d dead letters, want 1", n)
	}
	if p, _ := f.b.Paused(context.Background(), testQueue); p {
		t.Error("after refused POSTs the queue is paused")
	}
}

// TestNoActionThroughGET shows that the action URLs do nothing on GET.
func TestNoActionThroughGET(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "boom", job{To: "a@example.com"})
	for _, path := range []string{"/queues/dash.send/purge?all=yes&confirm=yes&token=" + f.srv.token, "/queues/dash.send/redrive?all=yes&confirm=yes&token=" + f.srv.token, "/queues/dash.send/pause?confirm=yes&token=" + f.srv.token} {
		if status, _ := f.get(t, path); status != 405 {
			t.Errorf("GET %s = %d, want 405", path, status)
		}
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("after GETs %d dead letters, want 1", n)
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{ReadOnly: true})
	ids := f.kill(t, "boom", job{To: "a@example.com"})
	for _, path := range []string{"/queues/dash.send", "/queues/dash.send/dead/" + ids[0]} {
		status, body := f.get(t, path)
		if status != 200 {
			t.Fatalf("GET %s = %d", path, status)
		}
		for _, hidden := range []string{"<form", "<button", `name="token"`} {
			if strings.Contains(body, hidden) {
				t.Errorf("read-only %s shows %s\n%s", path, hidden, body)
			}
		}
		if !strings.Contains(body, `id="read-only"`) {
			t.Errorf("read-only %s does not say so", path)
		}
	}
	form := url.Values{"token": {f.srv.token}, "all": {"yes"}, "confirm": {"yes"}}
	for _, path := range []string{"/queues/dash.send/purge", "/queues/dash.send/redrive", "/queues/dash.send/pause", "/queues/dash.send/resume"} {
		if status, body := f.post(t, path, form, nil); status != 403 || !strings.Contains(body, "read-only") {
			t.Errorf("read-only POST %s = %d, want 403\n%s", path, status, body)
		}
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("after read-only POSTs %d dead letters, want 1", n)
	}
}

func TestLoopbackOnlyRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{LoopbackOnly: true})
	if status, body := f.get(t, "/"); status != 200 {
		t.Fatalf("GET / on 127.0.0.1 = %d\n%s", status, body)
	}
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/", nil)
	req.Host = "attacker.example:8080"
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := readBody(t, resp); status != 421 {
		t.Errorf("GET with Host attacker.example = %d, want 421\n%s", status, body)
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{PageSize: 4})
	var jobs []job
	for i := range 10 {
		jobs = append(jobs, job{To: fmt.Sprintf("u%d@example.com", i)})
	}
	ids := f.kill(t, "boom", jobs...)
	path := "/queues/dash.send"
	var seen []string
	for page := 0; path != ""; page++ {
		if page > 3 {
			t.Fatal("more than 3 pages of 4 for 10 letters")
		}
		status, body := f.get(t, path)
		if status != 200 {
			t.Fatalf("GET %s = %d", path, status)
		}
		for _, m := range letterLink.FindAllStringSubmatch(body, -1) {
			seen = append(seen, m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if !slices.Equal(seen, ids) {
		t.Errorf("pages showed %v, want every letter once in order %v", seen, ids)
	}
}

// vanishing lists one queue more than exists, as a broker does when a
// queue is deleted between listing and counting.
type vanishing struct{ *runtime.MemoryBackend }

func (v vanishing) Queues(ctx context.Context) ([]string, error) {
	names, err := v.MemoryBackend.Queues(ctx)
	return append(names, "gone.meanwhile"), err
}

func TestOverviewSurvivesDeletedQueue(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	rec := serve(t, vanishing{f.b}, Options{}, "/")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `data-queue="dash.send"`) || !strings.Contains(body, "1 queue was deleted while the list was read") {
		t.Errorf("GET / = %d, want the queues that exist and a note\n%s", rec.Code, body)
	}
}

func TestOnlyConfigured(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	other := runtime.QueueConfig{Name: "dash.other"}
	if err := f.b.Declare(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	rec := serve(t, f.b, Options{Configs: []runtime.QueueConfig{other}, OnlyConfigured: true}, "/")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `data-queue="dash.other"`) || strings.Contains(body, `data-queue="dash.send"`) {
		t.Errorf("GET / = %d, want dash.other listed and dash.send not\n%s", rec.Code, body)
	}
}

// serve answers one GET of path by a dashboard over admin, in process.
func serve(t *testing.T, admin Admin, opts Options, path string) *httptest.ResponseRecorder {
	t.Helper()
	srv, err := New(admin, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// TestPausedShown: a paused queue is marked on the overview and on its
// page, and the stats say so; after the resume neither does.
func TestPausedShown(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	if err := f.b.PauseQueue(context.Background(), testQueue); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/": `<span class="badge paused"`, "/queues/dash.send": "queuey queues resume dash.send", "/api/stats": `"paused":true`} {
		if _, body := f.get(t, path); !strings.Contains(body, want) {
			t.Errorf("GET %s while paused lacks %s\n%s", path, want, body)
		}
	}
	if err := f.b.ResumeQueue(context.Background(), testQueue); err != nil {
		t.Fatal(err)
	}
	if _, body := f.get(t, "/queues/dash.send"); strings.Contains(body, "badge paused") {
		t.Errorf("queue page still says paused after the resume\n%s", body)
	}
}

// TestPauseConfirmsThenActs: pause and resume ask first, then change the
// backend's paused state.
func TestPauseConfirmsThenActs(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ctx := context.Background()
	form := url.Values{"token": {f.srv.token}}
	if status, body := f.post(t, "/queues/dash.send/pause", form, nil); status != 200 || !strings.Contains(body, `id="confirm"`) {
		t.Fatalf("unconfirmed pause = %d, want a confirmation page\n%s", status, body)
	}
	if p, _ := f.b.Paused(ctx, testQueue); p {
		t.Fatal("paused before the confirmation")
	}
	form.Set("confirm", "yes")
	if status, body := f.post(t, "/queues/dash.send/pause", form, nil); status != 200 || !strings.Contains(body, "Paused the queue.") {
		t.Fatalf("confirmed pause = %d\n%s", status, body)
	}
	if p, _ := f.b.Paused(ctx, testQueue); !p {
		t.Error("not paused after the confirmed pause")
	}
	if status, body := f.post(t, "/queues/dash.send/resume", form, nil); status != 200 || !strings.Contains(body, "Resumed the queue.") {
		t.Fatalf("confirmed resume = %d\n%s", status, body)
	}
	if p, _ := f.b.Paused(ctx, testQueue); p {
		t.Error("still paused after the confirmed resume")
	}
}

// TestRedriveByReason re-drives the letters whose reason matches, and only
// those.
func TestRedriveByReason(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	f.kill(t, "smtp timeout", job{To: "a"}, job{To: "b"})
	f.kill(t, "bad address", job{To: "c"})
	form := url.Values{"token": {f.srv.token}, "reason": {"timeout"}}
	if status, body := f.post(t, "/queues/dash.send/redrive", form, nil); status != 200 || !strings.Contains(body, "whose reason contains") {
		t.Fatalf("unconfirmed = %d, want the confirmation naming the reason\n%s", status, body)
	}
	form.Set("confirm", "yes")
	if status, body := f.post(t, "/queues/dash.send/redrive", form, nil); status != 200 || !strings.Contains(body, "Re-drove 2 dead letters.") {
		t.Fatalf("confirmed = %d\n%s", status, body)
	}
	if n := f.dead(t); n != 1 {
		t.Errorf("%d dead letters, want the 1 of another reason", n)
	}
}

// TestIncidentMarks: the overview names each queue's kind and marks a
// non-zero dead count.
func TestIncidentMarks(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	f.kill(t, "boom", job{To: "a"})
	_, body := f.get(t, "/")
	for _, want := range []string{`<td class="kind mono">` + testConfig.Kind + `</td>`, `class="num dead-some" data-f="dead">1<`} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %s\n%s", want, body)
		}
	}
}
