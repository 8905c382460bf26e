package dashboard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// ladderAdmin is a memory backend whose ladders are fixed, or err.
type ladderAdmin struct {
	*runtime.MemoryBackend
	ls  []admin.LadderStats
	err error
}

func (a ladderAdmin) Ladders(context.Context) ([]admin.LadderStats, error) { return a.ls, a.err }

// TestLaddersPanel: a backend with delay ladders gets a panel of each
// ladder's waits and unrouted waits, saying how to put the latter back; a
// failed read is said so on the page, which is served all the same; the
// memory backend, which has no ladder, gets no panel.
func TestLaddersPanel(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	ls := []admin.LadderStats{
		{Name: "queuey.ladder.classic.1000ms", QueueType: "classic", Granularity: time.Second, Levels: 22, Waiting: 5},
		{Name: "queuey.ladder.quorum.1000ms", QueueType: "quorum", Granularity: time.Second, Levels: 22, Waiting: 2, Unrouted: 3, UnroutedQueue: "queuey.ladder.quorum.1000ms.unrouted"},
	}
	rec := serve(t, ladderAdmin{MemoryBackend: f.b, ls: ls}, Options{}, "/")
	body := rec.Body.String()
	for _, want := range []string{
		`id="ladders"`, `data-ladder="queuey.ladder.quorum.1000ms"`, `<td class="num dead-some">3</td>`, "(3 now)", "queuey ladder redrive",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, body)
		}
	}
	rec = serve(t, ladderAdmin{MemoryBackend: f.b, err: errors.New("connection refused")}, Options{}, "/")
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "The delay ladders could not be read: connection refused") || !strings.Contains(body, `id="queues"`) {
		t.Errorf("GET / with the ladders unreadable = %d:\n%s", rec.Code, body)
	}
	if body := serve(t, f.b, Options{}, "/").Body.String(); strings.Contains(body, `id="ladders"`) {
		t.Errorf("overview of the memory backend shows a ladders panel")
	}
}
