package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// deadAtShown matches the dead-lettered time as the pages show it.
var deadAtShown = regexp.MustCompile(`<time datetime="([^"]+)" title="[^"]+">(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC)</time>`)

// TestDeadLetteredAtShown: the letter page and the list of dead letters
// say when each letter was dead-lettered, in UTC.
func TestDeadLetteredAtShown(t *testing.T) {
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	before := time.Now()
	ids := f.kill(t, "boom", job{To: "a"})
	after := time.Now()
	_, body := f.get(t, "/queues/dash.send/dead/"+ids[0])
	row := regexp.MustCompile(`<th>dead-lettered at</th><td id="dead-at">` + deadAtShown.String() + `</td>`).FindStringSubmatch(body)
	if row == nil {
		t.Fatalf("letter page lacks the dead-lettered time\n%s", body)
	}
	at, err := time.Parse(time.RFC3339Nano, row[1])
	if err != nil || at.Before(before) || at.After(after) || row[2] != at.Format("2006-01-02 15:04:05.000 UTC") {
		t.Errorf("letter page: dead-lettered at %q shown as %q (%v), want a time between %v and %v", row[1], row[2], err, before, after)
	}
	_, body = f.get(t, "/queues/dash.send")
	if !strings.Contains(body, "<th>Dead-lettered</th>") || !strings.Contains(body, `<td class="when">`+row[0][strings.Index(row[0], "<time"):len(row[0])-len("</td>")]+`</td>`) {
		t.Errorf("queue page lacks the letter's dead-lettered time %s\n%s", row[1], body)
	}
}

// unrecorded is an Admin whose letters carry no dead-lettered time, as
// those the broker moved without saying when.
type unrecorded struct{ *runtime.MemoryBackend }

func (u unrecorded) DeadLetter(ctx context.Context, queue, id string) (admin.DeadLetterInfo, error) {
	l, err := u.MemoryBackend.DeadLetter(ctx, queue, id)
	l.DeadLetteredAt = time.Time{}
	return l, err
}

func (u unrecorded) DeadLetters(ctx context.Context, queue string, page admin.DeadLetterPage) (admin.DeadLetterList, error) {
	l, err := u.MemoryBackend.DeadLetters(ctx, queue, page)
	for i := range l.Letters {
		l.Letters[i].DeadLetteredAt = time.Time{}
	}
	return l, err
}

// TestDeadLetteredAtNotRecorded: a letter without a dead-lettered time
// says so, on its page and in the list, rather than show a zero time.
func TestDeadLetteredAtNotRecorded(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{Configs: []runtime.QueueConfig{testConfig}})
	ids := f.kill(t, "boom", job{To: "a"})
	srv, err := New(unrecorded{f.b}, Options{Configs: []runtime.QueueConfig{testConfig}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	f.ts = ts
	_, body := f.get(t, "/queues/dash.send/dead/"+ids[0])
	if !strings.Contains(body, `<td id="dead-at" class="note">not recorded`) || strings.Contains(body, "0001-01-01") {
		t.Errorf("letter page does not say the time is not recorded\n%s", body)
	}
	_, body = f.get(t, "/queues/dash.send")
	if !strings.Contains(body, `<td class="when"><span class="note" title="not recorded">—</span></td>`) || strings.Contains(body, "0001-01-01") {
		t.Errorf("queue page does not mark the time as not recorded\n%s", body)
	}
}
