package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait of these tests on an event.
const wait = 30 * time.Second

type result struct {
	out, err string
	code     int
}

// runCLI runs the command line args in env (stdout and stderr captured).
func runCLI(t *testing.T, ctx context.Context, env cli.Env, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env.Stdout = &out
	if env.Stderr == nil {
		env.Stderr = &errb
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	if env.Getenv == nil {
		// The broker under test and its management API, which may not
		// be on the default ports; --url and --management-url still win.
		env.Getenv = func(k string) string {
			switch k {
			case cli.URLEnv:
				return brokertest.URL()
			case cli.ManagementURLEnv:
				return brokertest.ManagementURL()
			}
			return ""
		}
	}
	code := cli.Main(ctx, args, env)
	return result{out: out.String(), err: errb.String(), code: code}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

type job struct {
	To string
	N  int
}

// memoryWithDead returns a memory backend whose queue "q" holds n dead
// letters of failed jobs, and their IDs, oldest first.
func memoryWithDead(t *testing.T, n int) (*runtime.MemoryBackend, runtime.QueueConfig, []string) {
	t.Helper()
	b, q, p := memoryQueue(t)
	var ids []string
	for i := range n {
		id, err := runtime.Enqueue(ctxT(t), p, q, job{To: "a@b.c", N: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	failAll(t, b, q, n, "550 mailbox does not exist")
	return b, q, ids
}

// memoryQueue returns a memory backend with the queue "q" declared, and a
// producer onto it.
func memoryQueue(t *testing.T) (*runtime.MemoryBackend, runtime.QueueConfig, *runtime.Producer) {
	t.Helper()
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.DefaultQueueConfig("q")
	q.Kind, q.Prefetch, q.Concurrency = runtime.KindOf[job](), 1, 1
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	return b, q, p
}

// failAll runs a worker on q whose handler fails every job for good with
// reason, until q holds n dead letters.
func failAll(t *testing.T, b *runtime.MemoryBackend, q runtime.QueueConfig, n int, reason string) {
	t.Helper()
	w := runtime.NewWorker(b)
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		return runtime.Permanent(errors.New(reason))
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	eventually.Nil(t, wait, func() error {
		st, err := b.QueueStats(ctxT(t), admin.Queue{Name: q.Name})
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Dead != n {
			return fmt.Errorf("%d of %d jobs dead", st[0].Dead, n)
		}
		return nil
	}, "every job dead")
	cancel()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("worker did not stop")
	}
}

// memEnv is an environment whose backend is b.
func memEnv(b *runtime.MemoryBackend) cli.Env {
	return cli.Env{Open: func(context.Context, cli.Target) (cli.Admin, func() error, error) {
		return b, func() error { return nil }, nil
	}}
}

func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 1)
	for _, args := range [][]string{
		{},
		{"dead"},
		{"dead", "ls"},
		{"dead", "ls", "q", "--limit", "0"},
		{"dead", "redrive", "q"},
		{"dead", "redrive", "q", "--all", "--id", "x"},
		{"dead", "redrive", "q", "--all", "--reason", "x"},
		{"dead", "purge", "q"},
		{"dead", "purge", "q", "--all"}, // no terminal to confirm on, no --yes
		{"dead", "redrive", "q", "--all"},
		{"nonsense"},
	} {
		r := runCLI(t, ctxT(t), memEnv(b), args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.err, "queuey:") {
			t.Errorf("queuey %s: exit %d, stderr %q; want exit 2 with a message", strings.Join(args, " "), r.code, r.err)
		}
	}
	if st, _ := b.QueueStats(ctxT(t), admin.Queue{Name: "q"}); st[0].Dead != 1 {
		t.Errorf("%d dead letters after refused commands, want 1 kept", st[0].Dead)
	}
	if r := runCLI(t, ctxT(t), memEnv(b), "dead", "purge", "q", "--all"); !strings.Contains(r.err, "--yes") {
		t.Errorf("refused purge says %q, want it to name --yes", r.err)
	}
}

func TestDeadLsJSON(t *testing.T) {
	before := time.Now()
	b, _, ids := memoryWithDead(t, 2)
	after := time.Now()
	r := runCLI(t, ctxT(t), memEnv(b), "--json", "dead", "ls", "q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	var page struct {
		Letters    []map[string]any
		NextCursor *string `json:"next_cursor"`
		Total      *int
	}
	if err := json.Unmarshal([]byte(r.out), &page); err != nil || page.Total == nil || *page.Total != 2 || page.NextCursor != nil || !strings.Contains(r.out, `"next_cursor": null`) {
		t.Fatalf("output is not a page of 2 letters with no next: %v\n%s", err, r.out)
	}
	letters := page.Letters
	if len(letters) != 2 || letters[0]["id"] != ids[0] || letters[1]["id"] != ids[1] {
		t.Fatalf("letters %v, want %v in order", letters, ids)
	}
	for _, key := range []string{"id", "queue", "kind", "attempt", "max_attempts", "enqueued_at", "dead_lettered_at", "reason", "last_error", "payload"} {
		if _, ok := letters[0][key]; !ok {
			t.Errorf("letter has no %q: %v", key, letters[0])
		}
	}
	for _, l := range letters {
		s, _ := l["dead_lettered_at"].(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !strings.HasSuffix(s, "Z") || at.Before(before) || at.After(after) {
			t.Errorf("dead_lettered_at %q (%v), want RFC 3339 in UTC between %v and %v", s, err, before, after)
		}
	}
	if p, _ := letters[0]["payload"].(map[string]any); p["To"] != "a@b.c" || p["N"] != float64(0) {
		t.Errorf("payload = %v, want the job's fields by name", letters[0]["payload"])
	}
}

// TestDeadShowDeadLetteredAt: dead show and dead ls say when a letter was
// dead-lettered, in UTC; dead ls has it as a column of its own.
func TestDeadShowDeadLetteredAt(t *testing.T) {
	before := time.Now()
	b, _, ids := memoryWithDead(t, 1)
	after := time.Now()
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "show", "q", ids[0])
	v, ok := field(r.out, "dead_lettered_at:")
	at, err := time.Parse(time.RFC3339Nano, v)
	if r.code != 0 || !ok || err != nil || !strings.HasSuffix(v, "Z") || at.Before(before) || at.After(after) {
		t.Errorf("dead show: dead_lettered_at %q (%v), want RFC 3339 in UTC between %v and %v, in (exit %d):\n%s", v, err, before, after, r.code, r.out)
	}

	r = runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q")
	lines := strings.Split(r.out, "\n")
	col := strings.Index(lines[0], "DEAD_LETTERED_AT")
	if r.code != 0 || col < 0 || len(lines) < 2 || len(lines[1]) < col+20 {
		t.Fatalf("dead ls has no DEAD_LETTERED_AT column (exit %d):\n%s", r.code, r.out)
	}
	if got, want := lines[1][col:col+20], at.Truncate(time.Second).Format(time.RFC3339); got != want {
		t.Errorf("dead ls: DEAD_LETTERED_AT %q, want %q, in:\n%s", got, want, r.out)
	}
}

func TestDeadLsTableAndPages(t *testing.T) {
	t.Parallel()
	b, _, ids := memoryWithDead(t, 3)
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q", "--limit", "2")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	lines := strings.Split(r.out, "\n")
	if !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "REASON") || !strings.HasPrefix(lines[1], ids[0]) || !strings.HasPrefix(lines[2], ids[1]) {
		t.Fatalf("table:\n%s", r.out)
	}
	if strings.Index(lines[0], "KIND") != strings.Index(lines[1], "cli_test.job") {
		t.Errorf("columns not aligned:\n%s", r.out)
	}
	_, cursor, ok := strings.Cut(r.out, "--after ")
	if !ok {
		t.Fatalf("no next page command in:\n%s", r.out)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "q", "--after", strings.TrimSpace(cursor))
	if r.code != 0 || !strings.Contains(r.out, ids[2]) || strings.Contains(r.out, ids[0]) {
		t.Errorf("second page (exit %d):\n%s", r.code, r.out)
	}
}

func TestConfirmOnTerminal(t *testing.T) {
	t.Parallel()
	b, _, ids := memoryWithDead(t, 2)
	env := memEnv(b)
	env.StdinTerminal = true
	env.Stdin = strings.NewReader("n\n")
	r := runCLI(t, ctxT(t), env, "dead", "purge", "q", "--all")
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "[y/N]") || !strings.Contains(r.err, "cancelled") {
		t.Fatalf("answered no: exit %d, stderr %q", r.code, r.err)
	}
	env.Stdin = strings.NewReader("y\n")
	r = runCLI(t, ctxT(t), env, "dead", "purge", "q", "--id", ids[0])
	if r.code != 0 || !strings.Contains(r.out, "purged 1 dead letter of q") {
		t.Fatalf("answered yes: exit %d, out %q, err %q", r.code, r.out, r.err)
	}
}

func TestErrorsNameWhat(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryWithDead(t, 1)
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "ls", "nope")
	if r.code != cli.ExitFailure || !strings.Contains(r.err, `"nope"`) || !strings.Contains(r.err, "no dead-letter queue") || strings.Count(r.err, "queuey:") != 1 {
		t.Errorf("unknown queue: exit %d, stderr %q", r.code, r.err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "dead", "show", "q", "no-such-id")
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "no-such-id") {
		t.Errorf("unknown ID: exit %d, stderr %q", r.code, r.err)
	}
	// Nothing listens on port 1: the dial fails at once.
	r = runCLI(t, ctxT(t), cli.Env{}, "--url", "amqp://ops:s3cret@127.0.0.1:1/", "dead", "ls", "q")
	if r.code != cli.ExitUnreachable || !strings.Contains(r.err, "broker unreachable") || !strings.Contains(r.err, "127.0.0.1:1") || strings.Contains(r.err, "s3cret") {
		t.Errorf("unreachable broker: exit %d, stderr %q; want the URL without its password", r.code, r.err)
	}
}

func TestURLFromEnvironment(t *testing.T) {
	t.Parallel()
	var got cli.Target
	env := cli.Env{
		Getenv: func(k string) string {
			return map[string]string{cli.URLEnv: "amqp://env/", cli.ManagementURLEnv: "http://m/"}[k]
		},
		Open: func(_ context.Context, tg cli.Target) (cli.Admin, func() error, error) {
			got = tg
			return nil, nil, errors.New("stop here")
		},
	}
	runCLI(t, ctxT(t), env, "dead", "ls", "q")
	if got.URL != "amqp://env/" || got.ManagementURL != "http://m/" {
		t.Errorf("target %+v, want the environment's URLs", got)
	}
	runCLI(t, ctxT(t), env, "--url", "amqp://flag/", "dead", "ls", "q")
	if got.URL != "amqp://flag/" {
		t.Errorf("target %+v, want --url to win", got)
	}
	env.Getenv = func(string) string { return "" } // no environment
	runCLI(t, ctxT(t), env, "dead", "ls", "q")
	if got.URL != cli.DefaultURL {
		t.Errorf("target %+v, want the default %s", got, cli.DefaultURL)
	}
}

func TestQueuesFromAnnotations(t *testing.T) {
	t.Parallel()
	b := runtime.NewMemoryBackend()
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Declare(ctxT(t), runtime.DefaultQueueConfig("emails.send_email")); err != nil {
		t.Fatal(err)
	}
	env := memEnv(b)
	env.Dir = "../../.."
	r := runCLI(t, ctxT(t), env, "queues", "--pkg", "./examples/emails/...")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	if !strings.Contains(r.out, "emails.send_email    emails.SendEmail   no      0") || !strings.Contains(r.out, "billing.charge_card  emails.ChargeCard  no      -") ||
		!strings.Contains(r.out, "note: billing.charge_card: not on the broker") {
		t.Errorf("queues table:\n%s", r.out)
	}
}

func TestRedriveByReasonAndKind(t *testing.T) {
	t.Parallel()
	b, q, ids := memoryWithDead(t, 2)
	r := runCLI(t, ctxT(t), memEnv(b), "dead", "redrive", "q", "--reason", "no such text", "--yes")
	if r.code != cli.ExitFailure || r.err != "queuey: dead redrive q: no dead letter has a reason containing \"no such text\"\n" {
		t.Fatalf("redrive of no match: exit %d, %q %q", r.code, r.out, r.err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "--json", "dead", "redrive", "q", "--reason", "550 mailbox", "--kind", "cli_test.job", "--yes")
	var res admin.RedriveResult
	if err := json.Unmarshal([]byte(r.out), &res); r.code != 0 || err != nil || len(res.Moved) != 2 || res.Moved[0] != ids[0] {
		t.Fatalf("redrive --reason --kind: exit %d, %v, %+v; want %v moved", r.code, err, res, ids)
	}
	if st, _ := b.QueueStats(ctxT(t), admin.Queue{Name: q.Name}); st[0].Dead != 0 || st[0].Ready != 2 {
		t.Errorf("stats %+v, want the 2 jobs ready and no dead letters", st[0])
	}
}

// TestMemoryQueuePurgeDelete: purge and delete work on the in-memory
// backend; a delete that would take dead letters along without
// --with-waits is refused with nothing deleted.
func TestMemoryQueuePurgeDelete(t *testing.T) {
	t.Parallel()
	b, q, _ := memoryWithDead(t, 1)
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, ctxT(t), memEnv(b), "queues", "purge", "q", "--yes")
	if r.code != cli.ExitOK || r.out != "purged 2 ready jobs from q\n" {
		t.Fatalf("purge: exit %d, %q %q", r.code, r.out, r.err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "queues", "delete", "q", "--yes")
	if r.code != cli.ExitFailure || r.out != "" || !strings.HasPrefix(r.err, `queuey: delete queue "q": the in-memory backend keeps a queue's dead letters and waits inside the queue`) {
		t.Fatalf("delete without --with-waits: exit %d, %q %q", r.code, r.out, r.err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "queues", "delete", "q", "--with-waits", "--yes")
	if r.code != cli.ExitOK || r.out != "deleted queue q with 0 jobs\ndeleted queue q.dead with 1 job\n" {
		t.Fatalf("delete --with-waits: exit %d, %q %q", r.code, r.out, r.err)
	}
	r = runCLI(t, ctxT(t), memEnv(b), "queues", "purge", "q", "--yes")
	if r.code != cli.ExitFailure || !strings.HasPrefix(r.err, `queuey: queue "q" does not exist`) {
		t.Fatalf("purge of the deleted queue: exit %d, %q %q", r.code, r.out, r.err)
	}
}

// vanishing lists one queue more than it has: a queue deleted between
// the listing and the read of its counts, as other programs do.
type vanishing struct{ cli.Admin }

func (v vanishing) Queues(ctx context.Context) ([]string, error) {
	names, err := v.Admin.Queues(ctx)
	return append(names, "gone.meanwhile"), err
}

// TestQueuesListingOutlivesDeletedQueue: a queue that only the listing
// named and that is gone when its counts are read is left out with a
// note; the command lists the rest and succeeds. A queue asked for by
// name that is missing still fails.
func TestQueuesListingOutlivesDeletedQueue(t *testing.T) {
	t.Parallel()
	b, _, _ := memoryQueue(t)
	env := cli.Env{Open: func(context.Context, cli.Target) (cli.Admin, func() error, error) {
		return vanishing{b}, func() error { return nil }, nil
	}}
	r := runCLI(t, ctxT(t), env, "queues")
	if r.code != 0 || !strings.Contains(r.out, "1 queue was deleted while the list was read") || strings.Contains(r.out+r.err, "gone.meanwhile") {
		t.Fatalf("queues with a queue deleted meanwhile: exit %d; want 0, the note and no row for it:\n%s%s", r.code, r.out, r.err)
	}
	r = runCLI(t, ctxT(t), env, "queues", "gone.meanwhile")
	if r.code != 1 || !strings.Contains(r.err, `no queue on the broker matches "gone.meanwhile"`) {
		t.Fatalf("queues naming a missing queue: exit %d; want 1 and it named:\n%s%s", r.code, r.out, r.err)
	}
}
