package annotations_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
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
	t.Parallel()
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
	t.Parallel()
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
	want.Kind = "emails.SendHTTPRequest"
	if diff := cmp.Diff(want, jobs[0].Queue); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	literal := runtime.QueueConfig{Name: "emails.send_http_request", Kind: "emails.SendHTTPRequest"}.WithDefaults()
	if diff := cmp.Diff(literal, jobs[0].Queue); diff != "" {
		t.Errorf("config differs from a QueueConfig literal of its name and kind, resolved (-literal +got):\n%s", diff)
	}
}

func TestEveryKey(t *testing.T) {
	t.Parallel()
	jobs, err := parse(t, `package emails

type (
	// ChargeCard charges a card.
	//
	//queuey:queue name=billing.charge prefetch=20 concurrency=4 max_priority=0 max_attempts=3 retry_base=2s retry_max=1m timeout=30s queue_type=quorum delay=plugin
	ChargeCard struct{ Cents int64 }

	//queuey:queue retry_base=2h schedule="CRON_TZ=Europe/Berlin 0 6 * * 1-5" missed=skip
	Slow struct{}

	//queuey:queue limit=10000 rate=10000/h limit_key=Customer
	Limited struct{ Customer string }

	//queuey:queue rate=1/m
	Minute struct{}

	//queuey:queue limit=1 rate=50/s
	Second struct{}
)
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []runtime.QueueConfig{{
		Name: "billing.charge", Kind: "emails.ChargeCard", Prefetch: 20, Concurrency: 4,
		MaxPriority: runtime.NoPriority, MaxAttempts: 3, RetryBase: 2 * time.Second, RetryMax: time.Minute,
		Timeout: 30 * time.Second, QueueType: runtime.QueueQuorum, Delay: runtime.DelayPlugin,
	}, {
		Name: "emails.slow", Kind: "emails.Slow", Prefetch: 10, Concurrency: 10, MaxPriority: 10,
		MaxAttempts: 5, RetryBase: 2 * time.Hour, RetryMax: 2 * time.Hour,
		QueueType: runtime.QueueClassic, Schedule: "CRON_TZ=Europe/Berlin 0 6 * * 1-5", Missed: runtime.MissedSkip,
	}, runtime.QueueConfig{
		Name: "emails.limited", Kind: "emails.Limited",
		Limit: 10000, Rate: runtime.Rate{N: 10000, Per: time.Hour}, LimitKey: "Customer",
	}.WithDefaults(), runtime.QueueConfig{
		Name: "emails.minute", Kind: "emails.Minute", Rate: runtime.Rate{N: 1, Per: time.Minute},
	}.WithDefaults(), runtime.QueueConfig{
		Name: "emails.second", Kind: "emails.Second", Limit: 1, Rate: runtime.Rate{N: 50, Per: time.Second},
	}.WithDefaults()}
	var got []runtime.QueueConfig
	for _, j := range jobs {
		got = append(got, j.Queue)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
}

const scheduleAccepted = `a cron spec of five fields in double quotes ("0 6 * * *", "CRON_TZ=Europe/Berlin 0 6 * * 1-5"), a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @midnight) or "@every <whole seconds, at least 1s>" ("@every 90s")`

func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, directive, want string
	}{
		{"unknown key", "prefetc=3", `jobs.go:3:16: unknown key prefetc (did you mean prefetch?); want one of name, prefetch, concurrency, max_priority, max_attempts, retry_base, retry_max, timeout, queue_type, delay, schedule, missed, limit, rate, limit_key`},
		{"dash for underscore", "max-attempts=3", `jobs.go:3:16: unknown key max-attempts (did you mean max_attempts?); want one of name, prefetch, concurrency, max_priority, max_attempts, retry_base, retry_max, timeout, queue_type, delay, schedule, missed, limit, rate, limit_key`},
		{"no value", "prefetch=", `jobs.go:3:16: key prefetch has no value; want prefetch=<an integer in 1..65535>`},
		{"bare key", "timeout", `jobs.go:3:16: key timeout has no value; want timeout=<a Go duration above 0, such as 30s or 5m>`},
		{"duplicate", "prefetch=1 prefetch=2", `jobs.go:3:27: duplicate key prefetch; it is already set at column 16`},
		{"range", "prefetch=0", `jobs.go:3:25: bad prefetch=0: want an integer in 1..65535`},
		{"enum", "queue_type=quorom", `jobs.go:3:27: bad queue_type=quorom: want classic or quorum (did you mean quorum?)`},
		{"concurrency", "prefetch=4 concurrency=5", `jobs.go:3:39: concurrency=5 is above prefetch=4; want 1..4`},
		{"retry_max", "retry_max=500ms", `jobs.go:3:26: retry_max=500ms is below retry_base (default 1s); want at least 1s`},
		{"schedule descriptor", "schedule=@fortnightly", `jobs.go:3:25: bad schedule=@fortnightly: unrecognized descriptor: @fortnightly; want ` + scheduleAccepted},
		{"schedule bad field", `schedule="61 * * * *"`, `jobs.go:3:25: bad schedule=61 * * * *: end of range (61) above maximum (59): 61; want ` + scheduleAccepted},
		{"schedule every fraction", `schedule="@every 1500ms"`, `jobs.go:3:25: bad schedule=@every 1500ms: @every takes whole seconds, at least 1s: 1500ms would tick every 1s; want ` + scheduleAccepted},
		{"schedule every zero", `schedule="@every 0s"`, `jobs.go:3:25: bad schedule=@every 0s: @every takes whole seconds, at least 1s: 0s would tick every 1s; want ` + scheduleAccepted},
		{"schedule every negative", `schedule="@every -5s"`, `jobs.go:3:25: bad schedule=@every -5s: @every takes whole seconds, at least 1s: -5s would tick every 1s; want ` + scheduleAccepted},
		{"schedule zone alone", `schedule=CRON_TZ=UTC`, `jobs.go:3:25: bad schedule=CRON_TZ=UTC: CRON_TZ=UTC is followed by no schedule; want ` + scheduleAccepted},
		{"schedule zone local", `schedule="CRON_TZ=Local 0 6 * * *"`, `jobs.go:3:25: bad schedule=CRON_TZ=Local 0 6 * * *: CRON_TZ=Local names no IANA zone, such as Europe/Berlin or UTC; want ` + scheduleAccepted},
		{"schedule never", `schedule="0 0 30 2 *"`, `jobs.go:3:25: bad schedule=0 0 30 2 *: no date matches it, so it never ticks; want ` + scheduleAccepted},
		{"schedule unterminated", `schedule="0 6 * * *`, `jobs.go:3:25: unterminated or malformed quoted value "0 6 * * *; want a Go double-quoted string such as "0 6 * * *"`},
		{"missed alone", "missed=skip", `jobs.go:3:23: missed=skip without schedule=; missed says what a schedule does with ticks it missed: add schedule= or drop missed=`},
		{"missed enum", "schedule=@daily missed=skp", `jobs.go:3:39: bad missed=skp: want once or skip (did you mean skip?)`},
		{"limit zero", "limit=0", `jobs.go:3:22: bad limit=0: a limit of 0 would run no job; want ` + limitAccepted},
		{"limit range", "limit=10001", `jobs.go:3:22: bad limit=10001: want ` + limitAccepted},
		{"limit negative", "limit=-1", `jobs.go:3:22: bad limit=-1: want ` + limitAccepted},
		{"limit not integer", "limit=1.5", `jobs.go:3:22: bad limit=1.5: want ` + limitAccepted},
		{"limit no value", "limit=", `jobs.go:3:16: key limit has no value; want limit=<` + limitAccepted + `>`},
		{"rate no period", "rate=50", `jobs.go:3:21: bad rate=50: a rate is a count and a period, with / between; want ` + rateAccepted},
		{"rate zero", "rate=0/s", `jobs.go:3:21: bad rate=0/s: a rate of 0 would start no job; want ` + rateAccepted},
		{"rate day", "rate=5/d", `jobs.go:3:21: bad rate=5/d: the period "d" is not s, m or h; want ` + rateAccepted},
		{"rate word", "rate=5/sec", `jobs.go:3:21: bad rate=5/sec: the period "sec" is not s, m or h; want ` + rateAccepted},
		{"rate duration", "rate=5/1s", `jobs.go:3:21: bad rate=5/1s: the period "1s" is not s, m or h; want ` + rateAccepted},
		{"rate range", "rate=10001/s", `jobs.go:3:21: bad rate=10001/s: want ` + rateAccepted},
		{"rate leading zero", "rate=050/s", `jobs.go:3:21: bad rate=050/s: want ` + rateAccepted},
		{"rate no count", "rate=/s", `jobs.go:3:21: bad rate=/s: want ` + rateAccepted},
		{"rate duplicate", "rate=5/s rate=6/s", `jobs.go:3:25: duplicate key rate; it is already set at column 16`},
		{"limit_key unexported", "limit_key=customer", `jobs.go:3:26: bad limit_key=customer: customer is not exported, and msgpack carries only exported fields: the worker reads the key from the job as it arrives; want ` + limitKeyAccepted},
		{"limit_key path", "limit_key=Customer.ID", `jobs.go:3:26: bad limit_key=Customer.ID: Customer.ID is not a Go identifier; want ` + limitKeyAccepted},
		{"limit_key misspelt", "limitkey=Customer", `jobs.go:3:16: unknown key limitkey (did you mean limit_key?); want one of name, prefetch, concurrency, max_priority, max_attempts, retry_base, retry_max, timeout, queue_type, delay, schedule, missed, limit, rate, limit_key`},
		{"limit_key name", "name=" + strings.Repeat("n", runtime.MaxKeyedQueueNameLen+1) + " limit_key=Customer",
			`jobs.go:3:21: name=` + strings.Repeat("n", runtime.MaxKeyedQueueNameLen+1) + ` is 174 bytes; with limit_key= each key's lease is named after the queue and the key, and the queue name is then at most 173 bytes: shorten it`},
		{"ladder name", "name=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn delay=ladder", `jobs.go:3:240: delay=ladder with queue name "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" of 212 bytes: a ladder wait's routing key is the name after 22 words of one bit (44 bytes at the default granularity), and a routing key is at most 255 bytes, so the name is at most 211 bytes: shorten it or use delay=queue`},
		{"quorum default ladder name", "name=nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn queue_type=quorum", `jobs.go:3:245: queue_type=quorum holds waits on the ladder by default, and queue name "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" is 212 bytes: a ladder wait's routing key is the name after 22 words of one bit (44 bytes at the default granularity), and a routing key is at most 255 bytes, so the name is at most 211 bytes: shorten it or add delay=queue`},
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

const (
	limitAccepted    = `an integer in 1..10000 (leave limit= out for no limit)`
	rateAccepted     = `a count per second, minute or hour: N/s, N/m or N/h with N in 1..10000, such as 50/s or 1000/h (leave rate= out for no rate limit)`
	limitKeyAccepted = `the name of an exported field of the job, of a string, integer or bool type`
)

// TestLimitKeyNames checks the queue names limit_key= takes: the longest
// keyed one is accepted; one byte more, or a default name that long, is
// refused where the name comes from.
func TestLimitKeyNames(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("n", runtime.MaxKeyedQueueNameLen)
	jobs, err := parse(t, "package p\n\n//queuey:queue name="+longest+" limit_key=Customer\ntype Job struct{ Customer string }\n")
	if err != nil {
		t.Fatalf("a keyed queue name of %d bytes was refused: %v", len(longest), err)
	}
	if len(jobs) != 1 || jobs[0].Queue.LimitKey != "Customer" || !jobs[0].LimitKeyPos.IsValid() {
		t.Fatalf("jobs = %+v, want one with LimitKey Customer and its position", jobs)
	}

	// The default name p.<snake_case(Type)>: 2 bytes of "p." and the type.
	typ := "J" + strings.Repeat("x", runtime.MaxKeyedQueueNameLen-2)
	_, err = parse(t, "package p\n\n//queuey:queue limit_key=Customer\ntype "+typ+" struct{ Customer string }\n")
	want := `jobs.go:3:1: the default queue name "p.j` + strings.Repeat("x", runtime.MaxKeyedQueueNameLen-2) + `" is 174 bytes; with limit_key= each key's lease is named after the queue and the key, and the queue name is then at most 173 bytes: shorten it`
	if err == nil || err.Error() != want {
		t.Errorf("error:\n got %v\nwant %s", err, want)
	}
}

// TestLimitKeyPos checks that a job records where its limit_key= value is,
// for the generator's check of the field, and no position without one.
func TestLimitKeyPos(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "jobs.go", "package p\n\n//queuey:queue limit=3 limit_key=Customer\ntype A struct{ Customer string }\n\n//queuey:queue limit=3\ntype B struct{}\n", parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := annotations.ParseFiles(fset, "p", []*ast.File{f})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("ParseFiles = %+v, %v; want two jobs", jobs, err)
	}
	if got := fset.Position(jobs[0].LimitKeyPos).String(); got != "jobs.go:3:34" {
		t.Errorf("LimitKeyPos of A at %s, want jobs.go:3:34", got)
	}
	if jobs[1].LimitKeyPos.IsValid() {
		t.Errorf("LimitKeyPos of B at %s, want none", fset.Position(jobs[1].LimitKeyPos))
	}
}

// TestDuplicateQueueName checks that a clash of queue names is reported
// where the second name comes from: its name= value when it has one, else
// its type.
func TestDuplicateQueueName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"both given", "//queuey:queue name=q\ntype A struct{}\n\n//queuey:queue prefetch=2 name=q\ntype B struct{}\n",
			`jobs.go:6:32: name=q of B is already the queue of A (jobs.go:3:21); give one of them another name=`},
		{"second given", "//queuey:queue\ntype A struct{}\n\n//queuey:queue name=p.a\ntype B struct{}\n",
			`jobs.go:6:21: name=p.a of B is already the queue of A (jobs.go:4:6); give one of them another name=`},
		{"second default", "//queuey:queue name=p.b\ntype A struct{}\n\n//queuey:queue\ntype B struct{}\n",
			`jobs.go:7:6: default queue name "p.b" of B is already the queue of A (jobs.go:3:21); give one of them another name=`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "package p\n\n"+tc.src)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.want)
			}
			var e *annotations.Error
			if !errors.As(err, &e) || e.Key != annotations.KeyName {
				t.Errorf("errors.As(*Error) gives %+v, want key %s", e, annotations.KeyName)
			}
		})
	}
}

// TestProseIsIgnored checks that comments which mention queuey: as prose
// are neither directives nor errors, wherever they are.
func TestProseIsIgnored(t *testing.T) {
	t.Parallel()
	jobs, err := parse(t, `// Package p is where jobs live.
// queuey: the job framework we use
// queuey:queue annotations mark its jobs.
package p

//queuey: jobs of this file
// queuey: see the package doc.

// Job is a job.
// queuey: the framework runs it.
// queuey:queue is the line below.
//
//queuey:queue prefetch=3
type Job struct {
	// queuey:queue would not belong here.
	ID string
}

// Ship ships.
// queuey: it enqueues through
// queuey:queue-annotated jobs.
func Ship() {
	// queuey: nothing here either.
}

//queuey:other is not about queues.
var x = 1
`)
	if err != nil {
		t.Fatalf("prose comments were refused:\n%v", err)
	}
	if len(jobs) != 1 || jobs[0].Queue.Prefetch != 3 {
		t.Errorf("jobs = %+v, want Job with prefetch=3", jobs)
	}
}

// TestMisspeltDirective checks that a line meant as a directive but not
// written as one is refused where it could be meant for a type.
func TestMisspeltDirective(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, src, want string }{
		{"plural", "//queuey:queues prefetch=3\ntype Job struct{}\n",
			`jobs.go:3:1: unknown directive //queuey:queues (did you mean //queuey:queue?); the only one is //queuey:queue`},
		{"short", "//queuey:que\ntype Job struct{}\n",
			`jobs.go:3:1: unknown directive //queuey:que (did you mean //queuey:queue?); the only one is //queuey:queue`},
		{"capital", "//queuey:Queue\ntype Job struct{}\n",
			`jobs.go:3:1: unknown directive //queuey:Queue (did you mean //queuey:queue?); the only one is //queuey:queue`},
		{"other word on a type", "// Job is a job.\n//queuey:job\ntype Job struct{}\n",
			`jobs.go:4:1: unknown directive //queuey:job; the only one is //queuey:queue`},
		{"near miss on a func", "//queuey:queues\nfunc f() {}\n",
			`jobs.go:3:1: unknown directive //queuey:queues (did you mean //queuey:queue?); the only one is //queuey:queue`},
		{"near miss detached", "//queuey:qeue prefetch=3\n\ntype Job struct{}\n",
			`jobs.go:3:1: unknown directive //queuey:qeue (did you mean //queuey:queue?); the only one is //queuey:queue`},
		{"space on a type", "// Job is a job.\n// queuey:queue prefetch=3\ntype Job struct{}\n",
			`jobs.go:4:1: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
		{"space without keys on a type", "// queuey:queue\ntype Job struct{}\n",
			`jobs.go:3:1: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
		{"space and near miss on a type", "//  queuey:queues\ntype Job struct{}\n",
			`jobs.go:3:1: "//  queuey:queues" is not a directive: write //queuey:queue with no space after //`},
		{"space in a group", "type (\n\t// queuey:queue max_attempts=2\n\tJob struct{}\n)\n",
			`jobs.go:4:2: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
		{"space detached", "// queuey:queue prefetch=3\n\ntype Job struct{}\n",
			`jobs.go:3:1: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
		{"space alone on a func", "// queuey:queue\nfunc f() {}\n",
			`jobs.go:3:1: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
		{"space with keys on a func", "// f does things.\n// queuey:queue prefetch=3\nfunc f() {}\n",
			`jobs.go:4:1: "// queuey:queue" is not a directive: write //queuey:queue with no space after //`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, "package p\n\n"+tc.src)
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
