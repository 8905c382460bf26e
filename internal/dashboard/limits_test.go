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

// limitAdmin is a memory backend whose global limits are fixed, or err;
// it records the queues it was asked for.
type limitAdmin struct {
	*runtime.MemoryBackend
	sts    []admin.LimitState
	err    error
	called chan []runtime.QueueConfig
}

func (a limitAdmin) LimitStates(_ context.Context, queues []runtime.QueueConfig) ([]admin.LimitState, error) {
	if a.called != nil {
		a.called <- queues
	}
	return a.sts, a.err
}

// TestLimitsPanel: a backend with limited queues gets a panel of each
// one's limit, tokens in use and jobs waiting, rate and keys, "-" for a
// limit the queue does not have; a failed read is said so on the page,
// which is served all the same; a backend that holds no limit gets no
// panel; started with packages, the dashboard asks for their queues'.
func TestLimitsPanel(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, Options{})
	sts := []admin.LimitState{
		{Queue: "billing.charge", Limit: 10, InUse: 10, Waiting: 4, Rate: runtime.Rate{N: 50, Per: time.Second}, RateReady: 12, KeysHeld: 3, KeysWaiting: 2},
		{Queue: "mail.send", Rate: runtime.Rate{N: 100, Per: time.Minute}, RateReady: 0, RateWaiting: 7},
	}
	la := limitAdmin{MemoryBackend: f.b, sts: sts, called: make(chan []runtime.QueueConfig, 1)}
	body := serve(t, la, Options{}, "/").Body.String()
	for _, want := range []string{
		`id="limits"`, `data-limit="billing.charge"`,
		`<td class="num">10</td>
<td class="num">10</td>
<td class="num">4</td>
<td class="num">50/s</td>
<td class="num">12</td>
<td class="num">0</td>
<td class="num">3</td>
<td class="num">2</td>`,
		`<td class="num">-</td>
<td class="num">-</td>
<td class="num">-</td>
<td class="num">100/m</td>
<td class="num">0</td>
<td class="num">7</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("overview lacks %q:\n%s", want, body)
		}
	}
	if asked := <-la.called; asked != nil {
		t.Errorf("without packages the dashboard asked for the limits of %+v, want every queue's (nil)", asked)
	}

	cfg := runtime.QueueConfig{Name: "mail.send", Rate: runtime.Rate{N: 100, Per: time.Minute}}
	la.sts = sts[1:]
	body = serve(t, la, Options{Configs: []runtime.QueueConfig{cfg}, OnlyConfigured: true}, "/").Body.String()
	if asked := <-la.called; len(asked) != 1 || asked[0].Name != cfg.Name {
		t.Errorf("with packages the dashboard asked for the limits of %+v, want %s's", asked, cfg.Name)
	}
	// The annotation says the queue has no limit_key: its keys are "-".
	if want := `<td class="num">7</td>
<td class="num">-</td>
<td class="num">-</td>`; !strings.Contains(body, want) {
		t.Errorf("overview lacks %q:\n%s", want, body)
	}

	rec := serve(t, limitAdmin{MemoryBackend: f.b, err: errors.New("connection refused")}, Options{}, "/")
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, "The global limits could not be read: connection refused") || !strings.Contains(body, `id="queues"`) {
		t.Errorf("GET / with the limits unreadable = %d:\n%s", rec.Code, body)
	}
	if body := serve(t, limitAdmin{MemoryBackend: f.b}, Options{}, "/").Body.String(); strings.Contains(body, `id="limits"`) {
		t.Errorf("overview of a backend without limited queues shows a limits panel")
	}
}
