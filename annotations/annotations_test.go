package annotations_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/queuey/queuey/annotations"
	"github.com/queuey/queuey/runtime"
)

func parse(t *testing.T, src string) ([]annotations.Job, error) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "jobs.go", src, parser.ParseComments)
	if err != nil {
		t.Fatalf("parse source: %v", err)
	}
	return annotations.ParseFiles(fset, f.Name.Name, []*ast.File{f})
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"SendEmail":       "send_email",
		"SendHTTPRequest": "send_http_request",
		"HTTPServer":      "http_server",
		"UserID":          "user_id",
		"ID":              "id",
		"OAuth2Token":     "o_auth2_token",
		"V2Job":           "v2_job",
		"Send_Email":      "send_email",
		"sendSMS":         "send_sms",
		"X":               "x",
	} {
		if got := annotations.SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	jobs, err := parse(t, `package emails

//queuey:queue
type SendHTTPRequest struct{ URL string }
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("got %d jobs, want 1", len(jobs))
	}
	want := runtime.DefaultQueueConfig("emails.send_http_request")
	want.Kind = "SendHTTPRequest"
	if diff := cmp.Diff(want, jobs[0].Queue); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestEveryKey(t *testing.T) {
	jobs, err := parse(t, `package emails

type (
	// ChargeCard charges a card.
	//
	//queuey:queue name=billing.charge prefetch=20 concurrency=4 max_priority=0 max_attempts=3 retry_base=2s retry_max=1m timeout=30s queue_type=quorum delay=plugin
	ChargeCard struct{ Cents int64 }

	//queuey:queue retry_base=2h
	Slow struct{}
)
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.QueueConfig{{
		Name: "billing.charge", Kind: "ChargeCard", Prefetch: 20, Concurrency: 4,
		MaxPriority: 0, MaxAttempts: 3, RetryBase: 2 * time.Second, RetryMax: time.Minute,
		Timeout: 30 * time.Second, QueueType: runtime.QueueQuorum, Delay: runtime.DelayPlugin,
	}, {
		Name: "emails.slow", Kind: "Slow", Prefetch: 10, Concurrency: 10, MaxPriority: 10,
		MaxAttempts: 5, RetryBase: 2 * time.Hour, RetryMax: 2 * time.Hour,
		QueueType: runtime.QueueClassic,
	}}
	var got []runtime.QueueConfig
	for _, j := range jobs {
		got = append(got, j.Queue)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name, directive, want string
	}{
		{"unknown key", "prefetc=3", `jobs.go:3:16: unknown key prefetc (did you mean prefetch?); want one of name, prefetch, concurrency, max_priority, max_attempts, retry_base, retry_max, timeout, queue_type, delay`},
		{"dash for underscore", "max-attempts=3", `jobs.go:3:16: unknown key max-attempts (did you mean max_attempts?); want one of name, prefetch, concurrency, max_priority, max_attempts, retry_base, retry_max, timeout, queue_type, delay`},
		{"no value", "prefetch=", `jobs.go:3:16: key prefetch has no value; want prefetch=<an integer in 1..65535>`},
		{"bare key", "timeout", `jobs.go:3:16: key timeout has no value; want timeout=<a Go duration above 0, such as 30s or 5m>`},
		{"duplicate", "prefetch=1 prefetch=2", `jobs.go:3:27: duplicate key prefetch; it is already set at column 16`},
		{"range", "prefetch=0", `jobs.go:3:25: bad prefetch=0: want an integer in 1..65535`},
		{"enum", "queue_type=quorom", `jobs.go:3:27: bad queue_type=quorom: want classic or quorum (did you mean quorum?)`},
		{"concurrency", "prefetch=4 concurrency=5", `jobs.go:3:39: concurrency=5 is above prefetch=4; want 1..4`},
		{"retry_max", "retry_max=500ms", `jobs.go:3:26: retry_max=500ms is below retry_base (default 1s); want at least 1s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "package p\n\n//queuey:queue "+tc.directive+"\ntype Job struct{}\n")
			if err == nil {
				t.Fatalf("no error, want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error:\n got %s\nwant %s", err, tc.want)
			}
			var e *annotations.Error
			if !errors.As(err, &e) || e.Pos.Line != 3 {
				t.Errorf("errors.As(*Error) gives %+v, want an error on line 3", e)
			}
		})
	}
}

func TestDuplicateQueueName(t *testing.T) {
	_, err := parse(t, `package p

//queuey:queue name=q
type A struct{}

//queuey:queue name=q
type B struct{}
`)
	want := `jobs.go:7:6: queue name "q" of B is already the queue of A (jobs.go:4:6); give one of them another name=`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}
