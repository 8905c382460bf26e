package otelqueuey_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/otelqueuey"
	"github.com/queuey/queuey/runtime"
)

// fakeLimits is an admin.LimitReader with fixed states.
type fakeLimits struct{ sts []admin.LimitState }

func (f fakeLimits) LimitStates(context.Context, []runtime.QueueConfig) ([]admin.LimitState, error) {
	return f.sts, nil
}

// scrape returns what the Prometheus handler serves.
func scrape(t *testing.T, handler http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// TestLimitGauges: with Config.Limits, a scrape shows each limited
// queue's limit, tokens in use and jobs waiting, its rate's tokens, ready
// starts and waiters, and its keys held and waited for, labelled by
// queue; a queue's gauges of a limit it does not have are not observed,
// as its config in LimitQueues says, or else its state.
func TestLimitGauges(t *testing.T) {
	mp, handler, err := otelqueuey.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	lr := fakeLimits{sts: []admin.LimitState{
		{Queue: "billing.charge", Limit: 10, InUse: 7, Waiting: 4, Rate: runtime.Rate{N: 50, Per: time.Second}, RateReady: 12, RateWaiting: 1, KeysHeld: 3, KeysWaiting: 2},
		{Queue: "mail.send", Rate: runtime.Rate{N: 100, Per: time.Minute}, RateWaiting: 9},
	}}
	inst, err := otelqueuey.New(otelqueuey.Config{MeterProvider: mp, Limits: lr, LimitQueues: []runtime.QueueConfig{
		{Name: "mail.send", Rate: runtime.Rate{N: 100, Per: time.Minute}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	body := scrape(t, handler)
	for _, want := range []string{
		`queuey_limit_tokens{queue="billing.charge"} 10`,
		`queuey_limit_in_use{queue="billing.charge"} 7`,
		`queuey_limit_waiting{queue="billing.charge"} 4`,
		`queuey_limit_rate_tokens{queue="billing.charge"} 50`,
		`queuey_limit_rate_ready{queue="billing.charge"} 12`,
		`queuey_limit_rate_waiting{queue="billing.charge"} 1`,
		`queuey_limit_keys_held{queue="billing.charge"} 3`,
		`queuey_limit_keys_waiting{queue="billing.charge"} 2`,
		`queuey_limit_rate_tokens{queue="mail.send"} 100`,
		`queuey_limit_rate_ready{queue="mail.send"} 0`,
		`queuey_limit_rate_waiting{queue="mail.send"} 9`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	for _, unwanted := range []string{`queuey_limit_tokens{queue="mail.send"}`, `queuey_limit_keys_held{queue="mail.send"}`} {
		if strings.Contains(body, unwanted) {
			t.Errorf("/metrics has %s, a limit mail.send does not have", unwanted)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}

	// Closed, the instrumentation reads the limits no more.
	if err := inst.Close(); err != nil {
		t.Fatal(err)
	}
	if body := scrape(t, handler); strings.Contains(body, "queuey_limit_") {
		t.Errorf("/metrics after Close still has limit gauges:\n%s", body)
	}
}
