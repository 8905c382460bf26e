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
