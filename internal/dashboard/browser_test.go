package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// The browser tests drive a real headless Chromium with chromedp. They
// find it at QUEUEY_CHROMIUM or on PATH (scripts/chromium.sh installs
// Debian's chromium), and skip without one unless CI or
// QUEUEY_REQUIRE_BROWSER is set: then they fail.

// chromiumPath returns the browser to drive.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("QUEUEY_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH and QUEUEY_CHROMIUM unset: run scripts/chromium.sh (make test does) to install Debian's chromium"
	if os.Getenv("CI") != "" || os.Getenv("QUEUEY_REQUIRE_BROWSER") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless Chromium with a fresh profile and returns a
// context of one tab in it, ended with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first call starts the browser, which lives as long as its
	// context: no timeout here, one per step in run.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// screenshots is where the browser tests save a PNG of each page they
// visit: QUEUEY_SCREENSHOTS, or a directory under the system's temporary
// directory. The test logs it.
var screenshots = sync.OnceValues(func() (string, error) {
	dir := os.Getenv("QUEUEY_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "queuey-dashboard-screenshots")
	}
	return dir, os.MkdirAll(dir, 0o755)
})

// shot saves a full-page screenshot of the tab as name.png.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir, err := screenshots()
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// text returns the text of the first element matching sel, waiting for it.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// eval returns the value of a JavaScript expression in the tab.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// stepTimeout bounds each step of a browser test.
const stepTimeout = 30 * time.Second

// run runs the steps in the tab, each bounded by stepTimeout.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Fatalf("%s (at %s): %v", what, loc, err)
	}
}

// browserQueue is a live queue for the browser tests: a worker that
// dead-letters every job on its first run and reports each job it handles
// once the job has been re-driven.
type browserQueue struct {
	cfg     runtime.QueueConfig
	handled chan string
}

func startBrowserQueue(t *testing.T, b runtime.Backend, cfg runtime.QueueConfig) *browserQueue {
	t.Helper()
	q := &browserQueue{cfg: cfg, handled: make(chan string, 16)}
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(5*time.Second))
	runtime.Handle(w, cfg, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		if info.Headers[admin.HeaderRedrives] == "" {
			return runtime.Permanent(fmt.Errorf("mailbox %s does not exist <b>550</b>", j.To))
		}
		select {
		case q.handled <- info.ID:
		case <-ctx.Done():
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("worker: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("worker did not stop within 15s")
		}
	})
	return q
}

// waitDead waits until ad reports n dead letters on queue.
func waitDead(t *testing.T, ad Admin, cfg runtime.QueueConfig, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := ad.QueueStats(ctx, admin.QueueOf(cfg))
		if err == nil && st[0].Dead == n {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("queue %s: want %d dead letters: last stats %+v, err %v", cfg.Name, n, st, err)
		}
	}
}

// browse runs the whole operator's path in Chromium over b: the overview
// refreshing live, a queue, a dead letter holding markup, a re-drive whose
// job is then handled, and a purge.
func browse(t *testing.T, b runtime.Backend, admin Admin, cfg runtime.QueueConfig, broker string) {
	q := startBrowserQueue(t, b, cfg)
	ctx := context.Background()
	p, err := runtime.NewProducer(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range []job{
		{To: "ada@example.com", Note: "welcome"},
		{To: `<script>window.pwned = 1</script>`, Note: `<img src=x onerror="window.pwned = 2">`},
		{To: "bob@example.com", Note: "receipt"},
	} {
		id, err := runtime.Enqueue(ctx, p, cfg, j)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitDead(t, admin, cfg, 3)

	srv, err := New(admin, Options{Broker: broker, Configs: []runtime.QueueConfig{cfg}, LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tab := browser(t)

	// Overview: the queue's row, then two refreshes without a reload.
	row := fmt.Sprintf(`tr[data-queue=%q]`, cfg.Name)
	run(t, tab, "overview", chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(row)))
	if got := text(t, tab, row+` td[data-f="dead"]`); got != "3" {
		t.Errorf("overview shows %q dead letters, want 3", got)
	}
	run(t, tab, "live refresh", chromedp.WaitVisible(chromedp.CSS(`body[data-refreshes="2"] #depth-chart polyline`)))
	shot(t, tab, "overview")

	// The queue's page lists the three letters.
	run(t, tab, "queue page", chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.CSS("#letters")))
	for _, id := range ids {
		run(t, tab, "letter "+id+" listed", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`a[href$=%q]`, "/dead/"+id))))
	}
	shot(t, tab, "queue")

	// The letter holding markup shows it as text and runs none of it.
	run(t, tab, "markup letter", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[href$=%q]`, "/dead/"+ids[1]))), chromedp.WaitVisible(chromedp.CSS("#payload")))
	payload := text(t, tab, "#payload")
	if !strings.Contains(payload, `"To": "<script>window.pwned = 1</script>"`) {
		t.Errorf("payload does not show the markup as text:\n%s", payload)
	}
	pwned := eval[int](t, tab, `window.pwned || 0`)
	scripts := eval[int](t, tab, `document.querySelectorAll("main script, main img, #reason b").length`)
	if pwned != 0 || scripts != 0 {
		t.Errorf("markup of a dead letter ran or became elements: window.pwned=%d, elements=%d", pwned, scripts)
	}
	if r := text(t, tab, "#reason"); !strings.Contains(r, "<b>550</b>") {
		t.Errorf("reason %q does not show its markup as text", r)
	}
	shot(t, tab, "letter-markup")

	// Re-drive one letter: confirm, see the result, see the job handled.
	run(t, tab, "letter", chromedp.Navigate(ts.URL+"/queues/"+cfg.Name+"/dead/"+ids[0]), chromedp.WaitVisible(chromedp.CSS("#payload")))
	if at := text(t, tab, "#dead-at"); !strings.HasSuffix(at, " UTC") || strings.Contains(at, "not recorded") {
		t.Errorf("letter page: dead-lettered at %q, want a time in UTC", at)
	}
	shot(t, tab, "letter")
	run(t, tab, "re-drive", chromedp.Click(chromedp.CSS("#redrive-one")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if got := text(t, tab, "#confirm-ids"); !strings.Contains(got, ids[0]) {
		t.Errorf("confirmation lists %q, want %s", got, ids[0])
	}
	shot(t, tab, "confirm")
	run(t, tab, "confirm re-drive", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if got := text(t, tab, "#result"); got != "Re-drove 1 dead letter." {
		t.Errorf("result %q, want Re-drove 1 dead letter.", got)
	}
	shot(t, tab, "result")
	select {
	case id := <-q.handled:
		if id != ids[0] {
			t.Errorf("handled job %s, want the re-driven %s", id, ids[0])
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("re-driven job %s not handled within 30s", ids[0])
	}

	// Purge the two left.
	run(t, tab, "purge all", chromedp.Click(chromedp.CSS("#back")), chromedp.WaitVisible(chromedp.CSS("#purge-all")),
		chromedp.Click(chromedp.CSS("#purge-all")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if got := text(t, tab, "#confirm-what"); !strings.Contains(got, "(2 dead letters now)") {
		t.Errorf("purge confirmation says %q, want 2 dead letters", got)
	}
	run(t, tab, "confirm purge", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if got := text(t, tab, "#result"); got != "Purged 2 dead letters." {
		t.Errorf("result %q, want Purged 2 dead letters.", got)
	}
	waitDead(t, admin, cfg, 0)
	dir, _ := screenshots()
	fmt.Fprintf(os.Stderr, "dashboard screenshots: %s\n", dir)
}

func TestBrowserMemory(t *testing.T) {
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { b.Close() }) // after the worker stops
	browse(t, b, b, runtime.QueueConfig{Name: "dash.browser", Kind: runtime.KindOf[job](), MaxAttempts: 3}, "")
}

// TestBrowserChartsFullOnFirstLoad: jobs run while no page is open; the
// first load of the overview and of the queue's page draws them, with axes
// and units.
func TestBrowserChartsFullOnFirstLoad(t *testing.T) {
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	f.kill(t, "boom", job{To: "a"}, job{To: "b"}, job{To: "c"})
	waitSamples(t, f.srv, len(f.srv.hist.all())+2) // two after the jobs ran
	tab := browser(t)
	for _, page := range []struct{ name, path string }{{"overview-charts", "/"}, {"queue-charts", "/queues/" + testQueue}} {
		run(t, tab, page.name, chromedp.Navigate(f.ts.URL+page.path), chromedp.WaitVisible(chromedp.CSS("#depth-chart polyline.dead")))
		points := eval[int](t, tab, `Number(document.getElementById("depth-chart").getAttribute("data-points"))`)
		dead := eval[string](t, tab, `document.querySelector("#depth-chart polyline.dead").getAttribute("points")`)
		if points < 2 || len(strings.Fields(dead)) < 2 {
			t.Errorf("%s: depth chart has %d samples, dead line %q; want 2 or more on first load", page.name, points, dead)
		}
		labels := eval[string](t, tab, `Array.from(document.querySelectorAll("#depth-chart text")).map(e => e.textContent).join("|")`)
		for _, want := range []string{"jobs", "now", "−10 min", "UTC"} {
			if !strings.Contains(labels, want) {
				t.Errorf("%s: depth chart labels %q lack %q", page.name, labels, want)
			}
		}
		if page.path == "/" {
			if got := text(t, tab, `tr[data-queue="dash.send"] td.dead-some`); got != "3" {
				t.Errorf("overview's dead cell %q, want 3 marked dead-some", got)
			}
			if got := text(t, tab, `tr[data-queue="dash.send"] td.kind`); got != testConfig.Kind {
				t.Errorf("overview's kind cell %q, want %s", got, testConfig.Kind)
			}
		}
		if got := text(t, tab, "#depth-last"); !strings.Contains(got, "3 dead") {
			t.Errorf("%s: chart caption %q, want 3 dead", page.name, got)
		}
		shot(t, tab, page.name)
	}
}

// TestBrowserPauseAndRedriveByReason pauses and resumes a queue from its
// page, and re-drives its letters of one reason.
func TestBrowserPauseAndRedriveByReason(t *testing.T) {
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	ctx := context.Background()
	f.kill(t, "smtp timeout after 30s", job{To: "a"}, job{To: "b"})
	f.kill(t, "mailbox does not exist", job{To: "c"})
	tab := browser(t)
	page := f.ts.URL + "/queues/" + testQueue

	run(t, tab, "pause", chromedp.Navigate(page), chromedp.Click(chromedp.CSS("#pause")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shot(t, tab, "pause-confirm")
	run(t, tab, "confirm pause", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if p, err := f.b.Paused(ctx, testQueue); err != nil || !p {
		t.Errorf("after the pause from the page Paused = %v, %v; want true", p, err)
	}
	run(t, tab, "resume", chromedp.Navigate(page), chromedp.Click(chromedp.CSS("#resume")), chromedp.WaitVisible(chromedp.CSS("#confirm")),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if p, err := f.b.Paused(ctx, testQueue); err != nil || p {
		t.Errorf("after the resume from the page Paused = %v, %v; want false", p, err)
	}

	run(t, tab, "re-drive by reason", chromedp.Navigate(page), chromedp.SendKeys(chromedp.CSS("#match-reason"), "timeout"),
		chromedp.Click(chromedp.CSS("#redrive-matching")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if got := text(t, tab, "#confirm-what"); !strings.Contains(got, "timeout") {
		t.Errorf("confirmation says %q, want the reason", got)
	}
	shot(t, tab, "redrive-reason-confirm")
	run(t, tab, "confirm re-drive by reason", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#result")))
	if got := text(t, tab, "#result"); got != "Re-drove 2 dead letters." {
		t.Errorf("result %q, want Re-drove 2 dead letters.", got)
	}
	shot(t, tab, "redrive-reason-result")
	if n := f.dead(t); n != 1 {
		t.Errorf("%d dead letters after the re-drive by reason, want 1", n)
	}
	if n, err := f.b.Ready(ctx, testQueue); err != nil || n != 2 {
		t.Errorf("%d jobs ready after the re-drive (%v), want the 2 moved", n, err)
	}
	run(t, tab, "queue page", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS("#letters")))
	// IDs and payloads stay on one line: the ID whole, the payload cut
	// with its whole text in the tooltip.
	if lines := eval[int](t, tab, `document.querySelector("td.id a").getClientRects().length`); lines != 1 {
		t.Errorf("the job ID wraps onto %d lines, want 1", lines)
	}
	if ws := eval[string](t, tab, `getComputedStyle(document.querySelector("td.summary")).whiteSpace + " " + document.querySelector("td.summary").title`); !strings.HasPrefix(ws, "nowrap {") {
		t.Errorf("payload cell: white-space and title %q, want nowrap and the payload", ws)
	}
	if cls := eval[string](t, tab, `document.getElementById("dead-count").className`); cls != "dead-some" {
		t.Errorf("dead count class %q, want dead-some", cls)
	}
	shot(t, tab, "queue-after")
}
