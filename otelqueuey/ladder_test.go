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
)

// fakeLadders is an admin.LadderAdmin with fixed ladders.
type fakeLadders struct{ ls []admin.LadderStats }

func (f fakeLadders) Ladders(context.Context) ([]admin.LadderStats, error) { return f.ls, nil }

func (f fakeLadders) UnroutedWaits(context.Context, admin.UnroutedSelector) ([]admin.UnroutedWait, error) {
	return nil, nil
}

func (f fakeLadders) RedriveUnrouted(context.Context, admin.UnroutedSelector, func(admin.UnroutedProgress)) (admin.UnroutedRedriveResult, error) {
	return admin.UnroutedRedriveResult{}, nil
}

// TestLadderGauges: with Config.Ladders, a scrape shows each ladder's
// waits and unrouted waits, labelled by ladder and queue type.
func TestLadderGauges(t *testing.T) {
	mp, handler, err := otelqueuey.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	la := fakeLadders{ls: []admin.LadderStats{
		{Name: "queuey.ladder.classic.1000ms", QueueType: "classic", Granularity: time.Second, Levels: 22, Waiting: 5, Unrouted: 0},
		{Name: "queuey.ladder.quorum.1000ms", QueueType: "quorum", Granularity: time.Second, Levels: 22, Waiting: 2, Unrouted: 3},
	}}
	inst, err := otelqueuey.New(otelqueuey.Config{MeterProvider: mp, Ladders: la})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
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
	for _, want := range []string{
		`queuey_ladder_unrouted{ladder="queuey.ladder.classic.1000ms",queue_type="classic"} 0`,
		`queuey_ladder_unrouted{ladder="queuey.ladder.quorum.1000ms",queue_type="quorum"} 3`,
		`queuey_ladder_waiting{ladder="queuey.ladder.classic.1000ms",queue_type="classic"} 5`,
		`queuey_ladder_waiting{ladder="queuey.ladder.quorum.1000ms",queue_type="quorum"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics has no line %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}
