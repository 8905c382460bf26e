package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/runtime"
)

// TestDashboardServes runs queuey dashboard --read-only on the memory
// backend: it prints where it serves, the pages answer there, actions are
// refused, and it exits 0 when its context ends.
func TestDashboardServes(t *testing.T) {
	t.Parallel()
	b, q, ids := memoryWithDead(t, 1)
	env := memEnv(b)
	base, stop := startDashboard(t, env, "--url", "amqp://ops:hunter2@rabbit.internal:5672/", "dashboard", "--addr", "127.0.0.1:0", "--read-only")
	resp, err := http.Get(base + "queues/" + q.Name + "/dead/" + ids[0])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "550 mailbox does not exist") {
		t.Errorf("GET letter = %d\n%s", resp.StatusCode, body)
	}
	resp, err = http.PostForm(base+"queues/"+q.Name+"/purge", url.Values{"all": {"yes"}, "confirm": {"yes"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST purge on a read-only dashboard = %d, want 403", resp.StatusCode)
	}
	stop()
}

// startDashboard runs queuey with args, which start a dashboard, checks
// its first line says where it serves, over what, and whether read-only,
// and returns the address and a stop that ends it and checks it exits 0.
func startDashboard(t *testing.T, env cli.Env, args ...string) (base string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	outR, outW := io.Pipe()
	env.Stdout, env.Stderr, env.Stdin = outW, io.Discard, strings.NewReader("")
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, args, env)
		outW.Close()
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
		io.Copy(io.Discard, outR)
	}()
	var first string
	select {
	case first = <-line:
	case <-time.After(wait):
		t.Fatal("queuey dashboard printed no address")
	}
	m := regexp.MustCompile(`^queuey dashboard: (http://127\.0\.0\.1:\d+/) over [^ ,]+(, read-only)? \(Ctrl-C stops\)`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q does not say where it serves and over what", first)
	}
	if want := slices.Contains(args, "--read-only"); (m[2] != "") != want {
		t.Fatalf("first line %q: read-only said %v, want %v", first, m[2] != "", want)
	}
	if strings.Contains(first, "hunter2") {
		t.Fatalf("first line %q shows the password", first)
	}
	return m[1], func() {
		http.DefaultClient.CloseIdleConnections()
		cancel()
		select {
		case c := <-code:
			if c != cli.ExitOK {
				t.Errorf("exit code %d after Ctrl-C, want 0", c)
			}
		case <-time.After(wait):
			t.Fatal("queuey dashboard did not stop when its context ended")
		}
	}
}

// TestDashboardPkg: --pkg shows only the annotated queues, configured from
// their annotations, and a package is no longer taken positionally.
func TestDashboardPkg(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 1)
	if err := b.Declare(ctxT(t), runtime.DefaultQueueConfig("emails.send_email")); err != nil {
		t.Fatal(err)
	}
	env := memEnv(b)
	env.Dir = "../../.."
	base, stop := startDashboard(t, env, "dashboard", "--addr", "127.0.0.1:0", "--pkg", "./examples/emails/...")
	defer stop()
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(body)
	if resp.StatusCode != 200 || !strings.Contains(page, `data-queue="emails.send_email"`) || !strings.Contains(page, "emails.SendEmail") || strings.Contains(page, `data-queue="q"`) {
		t.Errorf("GET / = %d: want emails.send_email with its kind and not the unannotated queue q\n%s", resp.StatusCode, page)
	}
	r := runCLI(t, ctxT(t), env, "dashboard", "--addr", "127.0.0.1:0", "./examples/emails/...")
	if r.code != cli.ExitUsage {
		t.Errorf("a positional package: exit %d, stderr %q; want 2", r.code, r.err)
	}
}

// TestPkgMatchingNothingFails: --pkg naming packages that declare no
// queue is a mistake, not an empty list.
func TestPkgMatchingNothingFails(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 0)
	env := memEnv(b)
	env.Dir = "../../.."
	for _, cmd := range []string{"queues", "dashboard"} {
		r := runCLI(t, ctxT(t), env, cmd, "--pkg", "./internal/rules/names")
		if want := "queuey: --pkg ./internal/rules/names: no //queuey:queue annotation there\n"; r.code != cli.ExitFailure || r.err != want {
			t.Errorf("%s --pkg ./internal/rules/names: exit %d, stderr %q; want 1, %q", cmd, r.code, r.err, want)
		}
	}
}

func TestDashboardBadAddrExits2(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 0)
	r := runCLI(t, ctxT(t), memEnv(b), "dashboard", "--addr", "no-port")
	if r.code != cli.ExitUsage || !strings.Contains(r.err, `dashboard address "no-port"`) {
		t.Errorf("code %d, stderr %q; want 2 naming the address", r.code, r.err)
	}
}
