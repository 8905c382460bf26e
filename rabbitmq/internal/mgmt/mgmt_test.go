package mgmt_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

func TestURLFor(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@mq.local:5672/":       "http://guest:guest@mq.local:15672/",
		"amqps://ops:s3cret@mq.example:5671/prod": "https://ops:s3cret@mq.example:15672/",
		"amqp://rabbit": "http://guest:guest@rabbit:15672/",
	} {
		got, err := mgmt.URLFor(in)
		if err != nil || got != want {
			t.Errorf("URLFor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := mgmt.URLFor("http://nope"); err == nil {
		t.Error("URLFor of an http URL: no error")
	}
}

// TestQueues checks the request (vhost as one escaped segment, basic auth)
// and the errors that name what went wrong without the password.
func TestQueues(t *testing.T) {
	var gotPath, gotUser string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.EscapedPath()
		user, pass, _ := r.BasicAuth()
		gotUser = user
		if pass != "s3cret" {
			http.Error(w, `{"error":"not_authorised"}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`[{"name":"q","type":"classic","messages_ready":3,"messages_unacknowledged":2,"consumers":1,"arguments":{}}]`))
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://ops:s3cret@", 1)
	c, err := mgmt.New(base, "/")
	if err != nil {
		t.Fatal(err)
	}
	qs, err := c.Queues(context.Background())
	if err != nil || len(qs) != 1 || qs[0].Ready != 3 || qs[0].Unacked != 2 || qs[0].Consumers != 1 {
		t.Fatalf("Queues = %+v, %v", qs, err)
	}
	if gotPath != "/api/queues/%2F" || gotUser != "ops" {
		t.Errorf("request path %q user %q, want /api/queues/%%2F as ops", gotPath, gotUser)
	}
	bad, _ := mgmt.New(strings.Replace(srv.URL, "http://", "http://ops:wrong@", 1), "/")
	_, err = bad.Queues(context.Background())
	if !errors.Is(err, mgmt.ErrUnreachable) || !strings.Contains(err.Error(), "credentials were refused") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("refused credentials: %v", err)
	}
	srv.Close()
	_, err = c.Queues(context.Background())
	if !errors.Is(err, mgmt.ErrUnreachable) || !strings.Contains(err.Error(), "rabbitmq_management") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("closed server: %v", err)
	}
}

// TestConsumers: the consumers of the client's virtual host are listed
// with the queue each consumes.
func TestConsumers(t *testing.T) {
	var gotPath, gotColumns string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotColumns = r.URL.EscapedPath(), r.URL.Query().Get("columns")
		_, _ = w.Write([]byte(`[{"consumer_tag":"a","queue":{"name":"q1"}},{"consumer_tag":"b","queue":{"name":"q2"}}]`))
	}))
	defer srv.Close()
	c, err := mgmt.New(srv.URL, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := c.Consumers(context.Background())
	if err != nil || len(cs) != 2 || cs[0].Tag != "a" || cs[0].Queue.Name != "q1" || cs[1].Queue.Name != "q2" {
		t.Fatalf("Consumers = %+v, %v", cs, err)
	}
	if gotPath != "/api/consumers/jobs" || gotColumns != "consumer_tag,queue.name" {
		t.Errorf("request path %q columns %q, want /api/consumers/jobs and consumer_tag,queue.name", gotPath, gotColumns)
	}
}
