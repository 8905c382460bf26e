package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/cmd/queuey/cli"
)

// TestDashboardServes runs queuey dashboard --read-only on the memory
// backend: it prints where it serves, the pages answer there, actions are
// refused, and it exits 0 when its context ends.
func TestDashboardServes(t *testing.T) {
	b, q, ids := memoryWithDead(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outR, outW := io.Pipe()
	env := memEnv(b)
	env.Stdout, env.Stderr, env.Stdin = outW, io.Discard, strings.NewReader("")
	code := make(chan int, 1)
	go func() {
		code <- cli.Main(ctx, []string{"--url", "amqp://ops:hunter2@127.0.0.1:5672/", "dashboard", "--addr", "127.0.0.1:0", "--read-only"}, env)
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
	m := regexp.MustCompile(`^queuey dashboard: (http://127\.0\.0\.1:\d+/) over amqp://ops:xxxxx@127\.0\.0\.1:5672/, read-only`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q does not say where it serves, over what, read-only", first)
	}
	base := m[1]
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

func TestDashboardBadAddrExits2(t *testing.T) {
	b, _, _ := memoryWithDead(t, 0)
	r := runCLI(t, ctxT(t), memEnv(b), "dashboard", "--addr", "no-port")
	if r.code != cli.ExitUsage || !strings.Contains(r.err, `dashboard address "no-port"`) {
		t.Errorf("code %d, stderr %q; want 2 naming the address", r.code, r.err)
	}
}
