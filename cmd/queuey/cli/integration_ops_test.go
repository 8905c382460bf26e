package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// firstLine is the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// want fails t unless r exited with code and its first line of output
// (stdout, else stderr) begins with prefix.
func want(t *testing.T, what string, r result, code int, prefix string) {
	t.Helper()
	out := r.out
	if code != cli.ExitOK {
		out = r.err
	}
	if r.code != code || !strings.HasPrefix(firstLine(out), prefix) {
		t.Errorf("%s: exit %d, first line %q; want exit %d and %q\nstdout:\n%s\nstderr:\n%s", what, r.code, firstLine(out), code, prefix, r.out, r.err)
	}
}

// TestBrokerNothingMatches: a command that names a queue or letters that
// are not there fails with exit 1 and says so, changing nothing.
func TestBrokerNothingMatches(t *testing.T) {
	bq := newBrokerQueue(t)
	bq.kill(1)
	nosuch := bq.q.Name + ".nosuch"
	for _, tc := range []struct {
		args   []string
		prefix string
	}{
		{[]string{"queues", "resume", nosuch}, `queuey: queue "` + nosuch + `" does not exist on the broker`},
		{[]string{"queues", "pause", nosuch}, `queuey: queue "` + nosuch + `" does not exist on the broker`},
		{[]string{"queues", nosuch}, `queuey: no queue on the broker matches "` + nosuch + `"`},
		{[]string{"queues", nosuch + "*"}, `queuey: no queue on the broker matches "` + nosuch + `*"`},
		{[]string{"queues", "purge", nosuch, "--yes"}, `queuey: queue "` + nosuch + `" does not exist on the broker`},
		{[]string{"queues", "delete", nosuch, "--yes"}, `queuey: queue "` + nosuch + `" does not exist on the broker`},
		{[]string{"dead", "redrive", bq.q.Name, "--kind", "tasks.Nope", "--yes"}, "queuey: dead redrive " + bq.q.Name + `: no dead letter has the kind "tasks.Nope"`},
		{[]string{"dead", "redrive", bq.q.Name, "--reason", "no such reason", "--yes"}, "queuey: dead redrive " + bq.q.Name + `: no dead letter has a reason containing "no such reason"`},
		{[]string{"dead", "redrive", bq.q.Name, "--id", "no-such-id", "--yes"}, "moved 0 dead letters of " + bq.q.Name},
		{[]string{"dead", "purge", bq.q.Name, "--id", "no-such-id", "--yes"}, "purged 0 dead letters of " + bq.q.Name},
		{[]string{"dead", "show", bq.q.Name, "no-such-id"}, "queuey: no dead letter of " + bq.q.Name + ` has the ID "no-such-id"`},
		{[]string{"dead", "ls", nosuch}, `queuey: queue "` + nosuch + `" has no dead-letter queue on the broker`},
	} {
		r := bq.cli(ctxT(t), cli.Env{}, tc.args...)
		out := r.err
		if strings.HasPrefix(tc.prefix, "moved") || strings.HasPrefix(tc.prefix, "purged") {
			out = r.out
			if !strings.Contains(r.err, `"no-such-id"`) {
				t.Errorf("%s: stderr %q does not name the ID", strings.Join(tc.args, " "), r.err)
			}
		}
		if r.code != cli.ExitFailure || !strings.HasPrefix(firstLine(out), tc.prefix) || strings.Count(r.err, "queuey:") != 1 {
			t.Errorf("%s: exit %d, first line %q; want exit 1 and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), r.code, firstLine(out), tc.prefix, r.out, r.err)
		}
	}
	if n := len(bq.ls()); n != 1 {
		t.Errorf("%d dead letters left, want the 1 there was", n)
	}
	// A queue that exists, resumed while not paused: nothing to do, and
	// it says so.
	r := bq.cli(ctxT(t), cli.Env{}, "queues", "resume", bq.q.Name)
	want(t, "resume of a queue not paused", r, cli.ExitOK, bq.q.Name+" was not paused: nothing changed")
}

// TestBrokerConnectionRefusals: a wrong password, a missing virtual host
// and a URL that is not one each have their own exit code and words, with
// no Go in them and no password.
func TestBrokerConnectionRefusals(t *testing.T) {
	bq := newBrokerQueue(t)
	u, err := url.Parse(bq.url)
	if err != nil {
		t.Fatal(err)
	}
	wrong := *u
	wrong.User = url.UserPassword(u.User.Username(), "not-the-password")
	novhost := *u
	novhost.Path = "/queuey-cli-test-novhost"
	badMgmt := managementURL(t)
	badMgmt.User = url.UserPassword(badMgmt.User.Username(), "not-the-password")
	for _, tc := range []struct {
		what   string
		args   []string
		code   int
		prefix string
	}{
		{"wrong password", []string{"--url", wrong.String(), "queues"}, cli.ExitAuth, "queuey: authentication refused by the broker at " + u.Host},
		{"missing vhost", []string{"--url", novhost.String(), "queues"}, cli.ExitVhost, `queuey: virtual host "queuey-cli-test-novhost" does not exist on the broker at ` + u.Host},
		{"not a URL", []string{"--url", "notaurl", "queues"}, cli.ExitBadURL, "queuey: --url is not an AMQP URL"},
		{"not a management URL", []string{"--management-url", "notaurl", "queues"}, cli.ExitBadURL, "queuey: --management-url is not a management API URL"},
		{"management API refused", []string{"--management-url", badMgmt.String(), "queues"}, cli.ExitManagement, "queuey: cannot list the broker's queues: management API not reachable"},
		{"refused connection", []string{"--url", "amqp://guest:guest@127.0.0.1:1/", "queues"}, cli.ExitUnreachable, "queuey: broker unreachable at 127.0.0.1:1: "},
	} {
		r := runCLI(t, ctxT(t), cli.Env{}, tc.args...)
		want(t, tc.what, r, tc.code, tc.prefix)
		if strings.Contains(r.err, "not-the-password") || strings.Contains(r.err, "rabbitmq.") || strings.Contains(r.err, "runtime.") || strings.Count(r.err, "queuey:") != 1 {
			t.Errorf("%s: stderr %q names a password, a Go identifier or queuey: twice", tc.what, r.err)
		}
	}
	r := runCLI(t, ctxT(t), cli.Env{}, "--help")
	for _, code := range []string{"4 broker unreachable", "5 authentication refused", "6 virtual host missing", "8 management API missing or refused", "asks for confirmation"} {
		if !strings.Contains(strings.Join(strings.Fields(r.out), " "), code) {
			t.Errorf("queuey --help does not say %q:\n%s", code, r.out)
		}
	}
}

// TestBrokerQueuePurgeDelete: queues purge and delete refuse while a
// consumer is attached unless --force, ask for confirmation unless --yes,
// and print the counts the broker confirms.
func TestBrokerQueuePurgeDelete(t *testing.T) {
	bq := newBrokerQueue(t)
	bq.kill(1)
	for i := range 3 {
		if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	r := bq.cli(ctxT(t), cli.Env{}, "queues", "purge", bq.q.Name)
	want(t, "purge without --yes off a terminal", r, cli.ExitUsage, "queuey: refusing to purge a queue without confirmation")

	// A consumer that takes nothing (prefetch 1, never acks: it holds one).
	ch := rawChannel(t, bq.url)
	if err := ch.Qos(1, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Consume(bq.q.Name, "queuey-cli-test", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "queues", "purge", bq.q.Name, "--yes")
	want(t, "purge with a consumer", r, cli.ExitFailure, "queuey: refusing to purge "+bq.q.Name+": 1 consumer attached")
	r = bq.cli(ctxT(t), cli.Env{}, "queues", "delete", bq.q.Name, "--yes")
	want(t, "delete with a consumer", r, cli.ExitFailure, "queuey: refusing to delete "+bq.q.Name+": 1 consumer attached")
	r = bq.cli(ctxT(t), cli.Env{}, "queues", "purge", bq.q.Name, "--yes", "--force")
	want(t, "purge --force with a consumer", r, cli.ExitOK, "purged 2 ready jobs from "+bq.q.Name)
	if err := ch.Close(); err != nil { // the job it held goes back: ready again
		t.Fatal(err)
	}

	r = bq.cli(ctxT(t), cli.Env{}, "queues", "purge", bq.q.Name, "--yes")
	want(t, "purge", r, cli.ExitOK, "purged 1 ready job from "+bq.q.Name)
	if err := bq.b.PauseQueue(ctxT(t), bq.q.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: 9}); err != nil {
		t.Fatal(err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "queues", "delete", bq.q.Name, "--with-waits", "--yes")
	want(t, "delete --with-waits", r, cli.ExitOK, "deleted queue "+bq.q.Name+" with 1 job")
	for _, line := range []string{"deleted queue " + bq.q.Name + ".dead with 1 job", "deleted queue queuey.paused." + bq.q.Name + " with 0 jobs"} {
		if !strings.Contains(r.out, line+"\n") {
			t.Errorf("delete --with-waits does not say %q:\n%s", line, r.out)
		}
	}
	if paused, err := bq.b.Paused(context.Background(), bq.q.Name); err != nil || paused {
		t.Errorf("after delete --with-waits, Paused = %v, %v; want the marker gone", paused, err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "queues", bq.q.Name)
	want(t, "queues of the deleted queue", r, cli.ExitFailure, `queuey: no queue on the broker matches "`+bq.q.Name+`"`)
}

// managementURL is the management API of the broker under test, with its
// credentials.
func managementURL(t *testing.T) *url.URL {
	t.Helper()
	u, err := url.Parse(brokertest.ManagementURL())
	if err != nil || u.User == nil {
		t.Fatalf("management URL %q: %v (want http://user:password@host:port/)", brokertest.ManagementURL(), err)
	}
	return u
}

// brokerUser creates a user on the broker through its management API, with
// the given permissions on the default virtual host (none when perms is
// nil), and deletes it when t ends.
func brokerUser(t *testing.T, name, password string, perms map[string]string) {
	t.Helper()
	api := managementURL(t)
	user, pass := api.User.Username(), ""
	if p, ok := api.User.Password(); ok {
		pass = p
	}
	api.User = nil
	put := func(path string, body any) {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPut, api.JoinPath("api").String()+"/"+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.SetBasicAuth(user, pass)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("management API: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT /api/%s: %s", path, resp.Status)
		}
	}
	t.Cleanup(func() {
		req, err := http.NewRequest(http.MethodDelete, api.JoinPath("api").String()+"/users/"+url.PathEscape(name), nil)
		if err != nil {
			return
		}
		req.SetBasicAuth(user, pass)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		http.DefaultClient.CloseIdleConnections()
	})
	put("users/"+url.PathEscape(name), map[string]string{"password": password, "tags": ""})
	if perms != nil {
		put("permissions/%2F/"+url.PathEscape(name), perms)
	}
}

// TestBrokerPermissionRefused: a user the broker lets in but refuses the
// virtual host, and one that may read but not configure or write, each get
// exit 7 with the broker's words, and nothing changes.
func TestBrokerPermissionRefused(t *testing.T) {
	bq := newBrokerQueue(t)
	if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{To: "a@b.c"}); err != nil {
		t.Fatal(err)
	}
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	suffix := hex.EncodeToString(buf[:])
	novhost, readonly := "queuey-cli-test-novhost-"+suffix, "queuey-cli-test-readonly-"+suffix
	brokerUser(t, novhost, "pw", nil)
	brokerUser(t, readonly, "pw", map[string]string{"configure": "^$", "write": "^$", "read": ".*"})
	u, err := url.Parse(bq.url)
	if err != nil {
		t.Fatal(err)
	}
	as := func(user string) string {
		v := *u
		v.User = url.UserPassword(user, "pw")
		return v.String()
	}
	for _, tc := range []struct {
		what   string
		args   []string
		prefix string
	}{
		{"no permission on the vhost", []string{"--url", as(novhost), "queues", bq.q.Name}, `queuey: permission refused: the broker at ` + u.Host + ` does not let user "` + novhost + `" use virtual host "/"`},
		{"pause without configure", []string{"--url", as(readonly), "queues", "pause", bq.q.Name}, "queuey: permission refused by the broker: "},
		{"delete without configure", []string{"--url", as(readonly), "queues", "delete", bq.q.Name, "--yes"}, "queuey: permission refused by the broker: "},
	} {
		r := runCLI(t, ctxT(t), cli.Env{}, tc.args...)
		want(t, tc.what, r, cli.ExitPermission, tc.prefix)
		if strings.Contains(r.err, ":pw@") || strings.Contains(r.err, "rabbitmq.") || strings.Contains(r.err, "runtime.") || strings.Count(r.err, "queuey:") != 1 {
			t.Errorf("%s: stderr %q names a password, a Go identifier or queuey: twice", tc.what, r.err)
		}
	}
	if n, err := bq.b.Ready(ctxT(t), bq.q.Name); n != 1 || err != nil {
		t.Errorf("after the refusals: Ready = %d, %v; want the 1 job", n, err)
	}
	if paused, err := bq.b.Paused(ctxT(t), bq.q.Name); paused || err != nil {
		t.Errorf("after a refused pause: Paused = %v, %v; want false", paused, err)
	}
}
