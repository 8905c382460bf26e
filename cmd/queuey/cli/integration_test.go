package cli_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// brokerQueue is a queue of its own on the local broker, deleted with its
// dead-letter queue when the test ends.
type brokerQueue struct {
	t   *testing.T
	url string
	b   *rabbitmq.Backend
	q   runtime.QueueConfig
	p   *runtime.Producer
}

func newBrokerQueue(t *testing.T) *brokerQueue {
	t.Helper()
	url := brokertest.Require(t)
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-cli-test." + t.Name() + "." + hex.EncodeToString(buf[:])
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range []string{name, name + ".dead"} {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(n, false, false, false)
				ch.Close()
			}
		}
	})
	b, err := rabbitmq.Dial(ctxT(t), url, rabbitmq.Options{Logger: quiet(), ManagementURL: brokertest.ManagementURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.DefaultQueueConfig(name)
	q.Kind, q.Prefetch, q.Concurrency, q.MaxAttempts, q.RetryBase = runtime.KindOf[job](), 1, 1, 2, 10*time.Millisecond
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	return &brokerQueue{t: t, url: url, b: b, q: q, p: p}
}

// queueJSON is a queue as queuey --json queues prints it.
type queueJSON struct {
	Queue                                    string
	Kind                                     *string
	Exists, Paused                           bool
	Ready, Unacked, Waiting, Dead, Consumers *int
	Missing                                  []string
}

// pausedRow reports whether the queues table out has queue's row, marked
// paused.
func pausedRow(out, queue string) bool {
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == queue {
			return f[2] == "yes"
		}
	}
	return false
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// work runs a worker with h until the returned stop is called or the test
// ends.
func (bq *brokerQueue) work(h func(ctx context.Context, j job) error) (stop func()) {
	w := runtime.NewWorker(bq.b)
	runtime.Handle(w, bq.q, h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				bq.t.Errorf("worker did not stop within %v", wait)
			}
		})
	}
	bq.t.Cleanup(stop)
	return stop
}

// dead waits until the queue holds n dead letters.
func (bq *brokerQueue) dead(n int) {
	bq.t.Helper()
	eventually.Nil(bq.t, wait, func() error {
		st, err := bq.b.QueueStats(ctxT(bq.t), admin.Queue{Name: bq.q.Name})
		if err != nil {
			bq.t.Fatal(err)
		}
		if st[0].Dead != n {
			return fmt.Errorf("%d dead letters, want %d", st[0].Dead, n)
		}
		return nil
	}, "the dead letters")
}

// kill enqueues n jobs whose every run fails, runs them out of attempts
// one at a time, and returns their IDs once all are dead letters.
func (bq *brokerQueue) kill(n int) []string {
	bq.t.Helper()
	var ids []string
	for i := range n {
		id, err := runtime.Enqueue(ctxT(bq.t), bq.p, bq.q, job{To: "nobody@bounce.example", N: i})
		if err != nil {
			bq.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	stop := bq.work(func(ctx context.Context, j job) error { return errors.New("550 mailbox does not exist") })
	bq.dead(n)
	stop()
	return ids
}

// handled runs a worker that succeeds and reports each job it ran.
func (bq *brokerQueue) handled() <-chan runtime.Info {
	infos := make(chan runtime.Info, 1000)
	bq.work(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		infos <- info
		return nil
	})
	return infos
}

func recvInfo(t *testing.T, c <-chan runtime.Info) runtime.Info {
	t.Helper()
	select {
	case info := <-c:
		return info
	case <-time.After(wait):
		t.Fatalf("no job handled within %v", wait)
		return runtime.Info{}
	}
}

// cli runs the command against the broker.
func (bq *brokerQueue) cli(ctx context.Context, env cli.Env, args ...string) result {
	bq.t.Helper()
	return runCLI(bq.t, ctx, env, append([]string{"--url", bq.url}, args...)...)
}

// ls lists the queue's dead letters as JSON.
func (bq *brokerQueue) ls() []admin.DeadLetterInfo {
	bq.t.Helper()
	r := bq.cli(ctxT(bq.t), cli.Env{}, "--json", "dead", "ls", bq.q.Name, "--limit", "1000")
	if r.code != 0 {
		bq.t.Fatalf("dead ls: exit %d: %s", r.code, r.err)
	}
	var page struct {
		Letters []admin.DeadLetterInfo `json:"letters"`
	}
	if err := json.Unmarshal([]byte(r.out), &page); err != nil {
		bq.t.Fatalf("dead ls --json: %v\n%s", err, r.out)
	}
	return page.Letters
}

func ids(ls []admin.DeadLetterInfo) []string { return admin.DeadLetterList{Letters: ls}.IDs() }

// TestBrokerDeadLsTwice: dead letters of jobs that failed for real are
// listed, and listing again shows the same: nothing was removed.
func TestBrokerDeadLsTwice(t *testing.T) {
	bq := newBrokerQueue(t)
	want := bq.kill(3)
	first, second := bq.ls(), bq.ls()
	if !slices.Equal(ids(first), want) || !slices.Equal(ids(second), want) {
		t.Fatalf("dead ls gave %v then %v, want %v both times", ids(first), ids(second), want)
	}
	for i := range first {
		if first[i].DeadLetteredAt.IsZero() || !first[i].DeadLetteredAt.Equal(second[i].DeadLetteredAt) {
			t.Errorf("letter %s dead-lettered at %v, then at %v: want one time, recorded and kept", first[i].ID, first[i].DeadLetteredAt, second[i].DeadLetteredAt)
		}
	}
	l := first[0]
	if l.Attempt != 2 || l.MaxAttempts != 2 || !strings.Contains(l.Reason, "550 mailbox") || !strings.Contains(l.LastError, "550 mailbox") || l.Kind != "cli_test.job" {
		t.Errorf("letter %+v, want attempt 2 of 2 of kind Job with the error", l)
	}
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "show", bq.q.Name, want[1])
	if attempt, _ := field(r.out, "attempt:"); r.code != 0 || !strings.Contains(r.out, `"To": "nobody@bounce.example"`) || attempt != "2 of 2" {
		t.Errorf("dead show (exit %d):\n%s%s", r.code, r.out, r.err)
	}
	if at, _ := field(r.out, "dead_lettered_at:"); at != second[1].DeadLetteredAt.Format(time.RFC3339Nano) || second[1].DeadLetteredAt.IsZero() {
		t.Errorf("dead show: dead_lettered_at %q, want %v as dead ls --json gave it", at, second[1].DeadLetteredAt)
	}
	bq.dead(3)
}

// TestBrokerRedriveID: re-driving one ID moves exactly that job back, and
// it is handled on a fresh attempt.
func TestBrokerRedriveID(t *testing.T) {
	bq := newBrokerQueue(t)
	all := bq.kill(3)
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "redrive", bq.q.Name, "--id", all[1], "--yes")
	if r.code != 0 || !strings.Contains(r.out, "moved 1 dead letter of") {
		t.Fatalf("redrive --id: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if got := ids(bq.ls()); !slices.Equal(got, []string{all[0], all[2]}) {
		t.Errorf("left %v, want %v", got, []string{all[0], all[2]})
	}
	info := recvInfo(t, bq.handled())
	if info.ID != all[1] || info.Attempt != 1 || info.Headers[admin.HeaderRedrives] != "1" {
		t.Errorf("handled %+v, want job %s on attempt 1, re-driven once", info, all[1])
	}
}

// TestBrokerRedriveAll: re-driving all empties the dead-letter queue and
// every job is handled.
func TestBrokerRedriveAll(t *testing.T) {
	bq := newBrokerQueue(t)
	all := bq.kill(5)
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "redrive", bq.q.Name, "--all", "--yes")
	if r.code != 0 || !strings.Contains(r.out, "moved 5 dead letters") {
		t.Fatalf("redrive --all: exit %d\n%s%s", r.code, r.out, r.err)
	}
	bq.dead(0)
	infos := bq.handled()
	got := map[string]bool{}
	for range all {
		got[recvInfo(t, infos).ID] = true
	}
	for _, id := range all {
		if !got[id] {
			t.Errorf("job %s not handled", id)
		}
	}
}

// cancelOnWrite cancels a context on its first write: the first progress
// line of a re-drive.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	c.once.Do(c.cancel)
	return len(p), nil
}

// TestBrokerRedriveInterrupted: a re-drive stopped midway (its context
// cancelled, as by ^C) loses nothing: each job is handled or still dead.
func TestBrokerRedriveInterrupted(t *testing.T) {
	bq := newBrokerQueue(t)
	all := bq.kill(20)
	ctx, cancel := context.WithCancel(ctxT(t))
	env := cli.Env{StderrTerminal: true, Stderr: &cancelOnWrite{cancel: cancel}}
	r := bq.cli(ctx, env, "--json", "dead", "redrive", bq.q.Name, "--all", "--yes")
	if r.code != cli.ExitFailure {
		t.Fatalf("interrupted redrive: exit %d, want 1\n%s", r.code, r.out)
	}
	var res admin.RedriveResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("redrive --json: %v\n%s", err, r.out)
	}
	left := ids(bq.ls())
	if len(res.Moved) == 0 || len(res.Moved)+len(left) != len(all) {
		t.Fatalf("%d moved + %d left, want some moved and %d in all", len(res.Moved), len(left), len(all))
	}
	infos := bq.handled()
	handled := map[string]bool{}
	for range res.Moved {
		handled[recvInfo(t, infos).ID] = true
	}
	for _, id := range all {
		if !handled[id] && !slices.Contains(left, id) {
			t.Errorf("job %s lost", id)
		}
	}
}

// TestBrokerPoison: a poison letter is shown with its body and why, and a
// re-drive refuses it with a reason and keeps it.
func TestBrokerPoison(t *testing.T) {
	bq := newBrokerQueue(t)
	// A foreign producer's message: no envelope properties or headers.
	ch := rawChannel(t, bq.url)
	if err := ch.PublishWithContext(ctxT(t), "", bq.q.Name, true, false, amqp.Publishing{Body: []byte{0xde, 0xad, 0xbe, 0xef}}); err != nil {
		t.Fatal(err)
	}
	bq.work(func(ctx context.Context, j job) error { return nil })
	bq.dead(1)
	ls := bq.ls()
	if len(ls) != 1 || !ls[0].Poison || !strings.Contains(ls[0].Reason, "not a valid envelope") {
		t.Fatalf("letters %+v, want one poison letter with its reason", ls)
	}
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "show", bq.q.Name, ls[0].ID)
	if r.code != 0 || !strings.Contains(r.out, "de ad be ef") || !strings.Contains(r.out, "not a valid envelope") {
		t.Errorf("dead show of poison (exit %d):\n%s%s", r.code, r.out, r.err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "dead", "redrive", bq.q.Name, "--all", "--yes")
	hint := "inspect it with queuey dead show " + bq.q.Name + " " + ls[0].ID + "; remove it with queuey dead purge " + bq.q.Name + " --id " + ls[0].ID
	if r.code != cli.ExitFailure || !strings.Contains(r.out, "refused "+ls[0].ID+": poison") || !strings.Contains(r.out, hint) {
		t.Errorf("redrive of poison: exit %d, want the refusal and %q:\n%s%s", r.code, hint, r.out, r.err)
	}
	bq.dead(1)
}

// TestBrokerUntrustedPoison: a foreign message whose ID has a comma and
// terminal escapes, and whose text body has a carriage return and other
// controls that count as space: dead show prints the body's lines with
// every control escaped, the refusal of its re-drive escapes the ID, and
// --id purges exactly it, comma and all.
func TestBrokerUntrustedPoison(t *testing.T) {
	bq := newBrokerQueue(t)
	ch := rawChannel(t, bq.url)
	const id = "p1,p2\x1b[2J\x1b]0;owned\x07"
	body := "line one\rline 1 forged\u0085\nline two\v\n"
	for _, m := range []amqp.Publishing{{MessageId: id, Body: []byte(body)}, {MessageId: "p1", Body: []byte("x")}, {MessageId: "p2", Body: []byte("y")}} {
		if err := ch.PublishWithContext(ctxT(t), "", bq.q.Name, true, false, m); err != nil {
			t.Fatal(err)
		}
	}
	bq.work(func(ctx context.Context, j job) error { return nil })
	bq.dead(3)
	const idShown = `p1,p2\x1b[2J\x1b]0;owned\a`
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "show", bq.q.Name, id)
	if c, ok := raw(r.out); ok || r.code != 0 || !strings.HasSuffix(r.out, "\nline one\\rline 1 forged\\u0085\nline two\\v\n") {
		t.Errorf("dead show of poison: exit %d, raw %U, stdout:\n%s", r.code, c, r.out)
	}
	if got, _ := field(r.out, "id:"); got != idShown {
		t.Errorf("dead show: id %q, want %q", got, idShown)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "dead", "redrive", bq.q.Name, "--id", id, "--yes")
	if c, ok := raw(r.out + r.err); ok || r.code != cli.ExitFailure || !strings.Contains(r.out, "refused "+idShown+": poison") {
		t.Errorf("redrive of poison: exit %d, raw %U\n%s%s", r.code, c, r.out, r.err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "dead", "purge", bq.q.Name, "--id", id, "--yes")
	if r.code != 0 || !strings.Contains(r.out, "purged 1 dead letter of") {
		t.Fatalf("purge --id: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if got := ids(bq.ls()); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Errorf("left %q, want p1 and p2", got)
	}
}

// TestBrokerPurge: purge removes what it says it removes.
func TestBrokerPurge(t *testing.T) {
	bq := newBrokerQueue(t)
	all := bq.kill(4)
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "purge", bq.q.Name, "--id", all[0], "--id", all[3], "--yes")
	if r.code != 0 || !strings.Contains(r.out, "purged 2 dead letters") {
		t.Fatalf("purge --id: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if got := ids(bq.ls()); !slices.Equal(got, all[1:3]) {
		t.Errorf("left %v, want %v", got, all[1:3])
	}
	r = bq.cli(ctxT(t), cli.Env{}, "dead", "purge", bq.q.Name, "--all", "--yes")
	if r.code != 0 || !strings.Contains(r.out, "purged 2 dead letters") {
		t.Fatalf("purge --all: exit %d\n%s%s", r.code, r.out, r.err)
	}
	bq.dead(0)
}

// TestBrokerRedriveQueueGone: dead letters whose queue was deleted are
// refused with a clear error and stay.
func TestBrokerRedriveQueueGone(t *testing.T) {
	bq := newBrokerQueue(t)
	bq.kill(1)
	ch := rawChannel(t, bq.url)
	if _, err := ch.QueueDelete(bq.q.Name, false, false, false); err != nil {
		t.Fatal(err)
	}
	r := bq.cli(ctxT(t), cli.Env{}, "dead", "redrive", bq.q.Name, "--all", "--yes")
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "does not exist") || !strings.Contains(r.err, "stay") {
		t.Errorf("redrive onto a deleted queue: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if n := queueDepth(t, ch, bq.q.Name+".dead"); n != 1 {
		t.Errorf("%d dead letters left, want the 1 kept", n)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "--json", "queues")
	var rows []queueJSON
	if err := json.Unmarshal([]byte(r.out), &struct{ Queues *[]queueJSON }{&rows}); r.code != 0 || err != nil {
		t.Fatalf("queues --json: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	i := slices.IndexFunc(rows, func(s queueJSON) bool { return s.Queue == bq.q.Name })
	if i < 0 || rows[i].Dead == nil || *rows[i].Dead != 1 || rows[i].Exists || len(rows[i].Missing) != 1 || !strings.Contains(rows[i].Missing[0], "does not exist") {
		t.Errorf("queues lists %+v, want %s with its 1 dead letter and a note that the queue is gone", rows, bq.q.Name)
	}
}

// TestBrokerQueues: the queues table shows the counts of annotated
// queues and of queues the broker knows, and says what it cannot see
// without the management API.
func TestBrokerQueues(t *testing.T) {
	bq := newBrokerQueue(t)
	bq.kill(2)
	if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: 99}); err != nil {
		t.Fatal(err)
	}
	r := bq.cli(ctxT(t), cli.Env{}, "--json", "queues")
	var rows []queueJSON
	if err := json.Unmarshal([]byte(r.out), &struct{ Queues *[]queueJSON }{&rows}); r.code != 0 || err != nil {
		t.Fatalf("queues --json: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	i := slices.IndexFunc(rows, func(s queueJSON) bool { return s.Queue == bq.q.Name })
	if i < 0 || *rows[i].Ready != 1 || *rows[i].Dead != 2 || *rows[i].Unacked != 0 || *rows[i].Waiting != 0 || len(rows[i].Missing) != 0 || !rows[i].Exists {
		t.Fatalf("queues lists %+v, want %s with 1 ready, 2 dead, 0 in flight", rows, bq.q.Name)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "--management-url", "http://guest:guest@127.0.0.1:1/", "queues")
	if r.code != cli.ExitManagement || !strings.HasPrefix(r.err, "queuey: cannot list the broker's queues: management API not reachable") || !strings.Contains(r.err, "rabbitmq_management") {
		t.Errorf("queues without the management API: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// A queue named needs no listing: its counts are shown, those only the
	// management API has are unknown (null).
	r = bq.cli(ctxT(t), cli.Env{}, "--management-url", "http://guest:guest@127.0.0.1:1/", "--json", "queues", bq.q.Name)
	rows = nil
	if err := json.Unmarshal([]byte(r.out), &struct{ Queues *[]queueJSON }{&rows}); r.code != 0 || err != nil || len(rows) != 1 ||
		*rows[0].Ready != 1 || rows[0].Unacked != nil || rows[0].Waiting != nil || !strings.Contains(r.out, `"unacked": null`) {
		t.Errorf("queues NAME without the management API: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	r = bq.cli(ctxT(t), cli.Env{Dir: "../../.."}, "--management-url", "http://guest:guest@127.0.0.1:1/", "queues", "--pkg", "./examples/emails/...")
	// The example's queues exist when it has run on this broker; either way
	// the table says what it could not see.
	if r.code != 0 || !strings.Contains(r.out, "unacked: management API not reachable") && !strings.Contains(r.out, "not on the broker") {
		t.Errorf("queues of packages without the management API: exit %d\n%s%s", r.code, r.out, r.err)
	}
}

func rawChannel(t *testing.T, url string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func queueDepth(t *testing.T, ch *amqp.Channel, name string) int {
	t.Helper()
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %q: %v", name, err)
	}
	return q.Messages
}

// TestBrokerPauseResume: queues pause and resume on the broker set and
// clear the queue's paused state, which the queues table shows, and which
// a worker obeys: no job runs while paused, the job waiting runs after.
func TestBrokerPauseResume(t *testing.T) {
	bq := newBrokerQueue(t)
	t.Cleanup(func() { _ = bq.b.ResumeQueue(context.Background(), bq.q.Name) })
	if r := bq.cli(ctxT(t), cli.Env{}, "queues", "pause", bq.q.Name); r.code != 0 {
		t.Fatalf("queues pause: exit %d\n%s%s", r.code, r.out, r.err)
	}
	handled := bq.handled() // a worker started while the queue is paused
	if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	r := bq.cli(ctxT(t), cli.Env{}, "queues")
	if !pausedRow(r.out, bq.q.Name) {
		t.Errorf("queues while paused does not mark it:\n%s%s", r.out, r.err)
	}
	select {
	case info := <-handled:
		t.Fatalf("job %s ran while its queue was paused", info.ID)
	case <-time.After(time.Second):
	}
	if r := bq.cli(ctxT(t), cli.Env{}, "queues", "resume", bq.q.Name); r.code != 0 {
		t.Fatalf("queues resume: exit %d\n%s%s", r.code, r.out, r.err)
	}
	recvInfo(t, handled)
	if r := bq.cli(ctxT(t), cli.Env{}, "queues", "pause", bq.q.Name+".nope"); r.code != cli.ExitFailure || !strings.Contains(r.err, "does not exist") {
		t.Errorf("queues pause of a missing queue: exit %d\n%s%s", r.code, r.out, r.err)
	}
}
