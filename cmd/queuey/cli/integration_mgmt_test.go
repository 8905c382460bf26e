package cli_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/runtime"
)

// forward listens on a port of its own on 127.0.0.1 and forwards every
// connection to target, until t ends: a second way to the same broker, as
// a proxy or a forwarded port is. It returns the port.
func forward(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			track(in)
			track(out)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(out, in); out.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// otherBroker serves a management API of another broker: cluster
// "rabbit@elsewhere", with queues of its own. It returns its URL with
// credentials.
func otherBroker(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/overview":
			_ = json.NewEncoder(w).Encode(map[string]any{"cluster_name": "rabbit@elsewhere", "node": "rabbit@elsewhere-1",
				"listeners": []map[string]any{{"node": "rabbit@elsewhere-1", "protocol": "amqp", "ip_address": "127.0.0.1", "port": 5672}}})
		case strings.HasPrefix(r.URL.Path, "/api/queues/"):
			_ = json.NewEncoder(w).Encode([]map[string]any{{"name": "elsewhere.jobs", "type": "classic", "messages_ready": 7, "arguments": map[string]any{}},
				{"name": "elsewhere.jobs.dead", "type": "classic", "messages_ready": 1, "arguments": map[string]any{}}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("guest", "guest")
	u.Path = "/"
	return u.String()
}

// TestBrokerManagementOfAnotherBroker: a management API that serves
// another broker than the one --url reaches is refused with exit 8, by
// every command that opens the broker, saying which URL serves which
// cluster and to pass --management-url; nothing of that broker is shown.
// The same broker reached through another port (a forwarder, as a proxy
// is) is no mismatch: its default management API is its own.
func TestBrokerManagementOfAnotherBroker(t *testing.T) {
	bq := newBrokerQueue(t)
	if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	other := otherBroker(t)
	for _, args := range [][]string{
		{"queues"},
		{"queues", bq.q.Name},
		{"--json", "queues"},
		{"dead", "ls", bq.q.Name},
		{"dashboard", "--addr", "127.0.0.1:0"},
	} {
		r := bq.cli(ctxT(t), cli.Env{}, append([]string{"--management-url", other}, args...)...)
		for _, says := range []string{`serves cluster "rabbit@elsewhere" (node "rabbit@elsewhere-1")`, `reaches cluster "`, "--management-url", strings.TrimSuffix(strings.TrimPrefix(other, "http://guest:guest@"), "/")} {
			if r.code != cli.ExitManagement || !strings.Contains(r.err, says) {
				t.Errorf("%s with another broker's management API: exit %d; want %d and %q in:\n%s%s", strings.Join(args, " "), r.code, cli.ExitManagement, says, r.out, r.err)
			}
		}
		if strings.Contains(r.out+r.err, "elsewhere.jobs") || strings.Contains(r.err, ":guest@") || strings.Count(r.err, "queuey:") != 1 {
			t.Errorf("%s: shows the other broker's queues, a password or queuey: twice:\n%s%s", strings.Join(args, " "), r.out, r.err)
		}
	}

	u, err := url.Parse(bq.url)
	if err != nil {
		t.Fatal(err)
	}
	port := forward(t, u.Host)
	via := *u
	via.Host = net.JoinHostPort(u.Hostname(), port)
	r := runCLI(t, ctxT(t), cli.Env{}, "--url", via.String(), "--json", "queues", bq.q.Name+"*")
	var rows []queueJSON
	if err := json.Unmarshal([]byte(r.out), &struct{ Queues *[]queueJSON }{&rows}); r.code != 0 || err != nil || len(rows) != 1 ||
		rows[0].Queue != bq.q.Name || *rows[0].Ready != 1 || rows[0].Unacked == nil || len(rows[0].Missing) != 0 {
		t.Errorf("queues %s* through a forwarded port: exit %d, %v; want its row, counted through its own management API:\n%s%s", bq.q.Name, r.code, err, r.out, r.err)
	}
}
