package dashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// overview serves the queues table and the chart.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	snap, samples, err := s.hist.get(r.Context())
	if err != nil {
		s.failAdmin(w, r, "list queues", err)
		return
	}
	s.render(w, http.StatusOK, "overview", "Queues", overviewView{snap, s.charts(samples, ""), s.outboxPanel(r.Context()), s.laddersPanel(r.Context()), s.limitsPanel(r.Context())})
}

// overviewView is what the overview shows.
type overviewView struct {
	snapshot
	Charts charts
	Outbox *outboxView // nil without Options.Outbox
	// Ladders is nil when the backend has no delay ladder.
	Ladders *laddersView
	// Limits is nil when the backend holds no global limit.
	Limits *limitsView
}

// charts renders the charts of all queues, or of queue when not empty.
func (s *Server) charts(samples []sample, queue string) charts {
	if queue == "" {
		c := drawCharts(samples, s.hist.now())
		c.Src = "/api/charts"
		return c
	}
	c := drawCharts(of(samples, queue), s.hist.now())
	c.Src, c.Who = "/api/charts?queue="+url.QueryEscape(queue), "this queue"
	return c
}

// chartsJSON serves the charts' live refresh: those of all queues, or of
// the queue named by the query's queue.
func (s *Server) chartsJSON(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.charts(s.hist.all(), r.URL.Query().Get("queue")))
}

// statsJSON is what /api/stats answers: the latest snapshot and the
// samples of the chart.
type statsJSON struct {
	snapshot
	Samples []sample `json:"samples"`
}

// stats serves the live refresh of the overview.
func (s *Server) stats(w http.ResponseWriter, r *http.Request) {
	snap, samples, err := s.hist.get(r.Context())
	if err != nil {
		s.opts.Logger.Error("queuey dashboard: stats", "err", err)
		http.Error(w, "list queues: "+err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(statsJSON{snap, samples})
}

// queueView is what the queue page shows.
type queueView struct {
	Stats   admin.QueueStats
	Config  *runtime.QueueConfig
	Letters []letterRow
	After   string // the cursor this page starts after, empty on the first
	Next    string // the cursor of the next page, empty on the last
	Charts  charts
	// Drift compares Config with the broker's queue, read at each view;
	// DriftErr says why it could not be.
	Drift    *admin.QueueDrift
	DriftErr string
	// Pausable is set when the Admin can pause and resume queues.
	Pausable bool
	// Reasons and Kinds are those of the letters on this page, offered
	// to re-drive or purge by.
	Reasons, Kinds []string
}

type letterRow struct {
	admin.DeadLetterInfo
	Summary string
}

// queue serves one queue's page: stats, config, hold queues and a page of
// dead letters.
func (s *Server) queue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	after := r.URL.Query().Get("after")
	cfg := s.config(name)
	stats, err := s.admin.QueueStats(r.Context(), admin.QueueOf(cfg))
	if err != nil {
		s.failAdmin(w, r, fmt.Sprintf("queue %q", name), err)
		return
	}
	page, err := s.admin.DeadLetters(r.Context(), name, admin.DeadLetterPage{After: after, Limit: s.opts.PageSize})
	if err != nil {
		s.failAdmin(w, r, fmt.Sprintf("dead letters of %q", name), err)
		return
	}
	v := queueView{Stats: stats[0], After: after, Next: page.Next, Charts: s.charts(s.hist.all(), name)}
	if _, ok := s.configs[name]; ok {
		v.Config = &cfg
		if dr, ok := s.admin.(admin.DriftReader); ok {
			d, err := dr.QueueDrift(r.Context(), cfg)
			if err != nil {
				v.DriftErr = "Arguments not compared with the broker's: " + err.Error()
			} else {
				v.Drift = &d
			}
		}
	}
	v.Stats.Dead = page.Total // the newer count of the two
	_, v.Pausable = s.admin.(admin.Pauser)
	for _, l := range page.Letters {
		v.Letters = append(v.Letters, letterRow{DeadLetterInfo: l, Summary: summary(l)})
		if !slices.Contains(v.Reasons, l.Reason) && len(v.Reasons) < 20 {
			v.Reasons = append(v.Reasons, l.Reason)
		}
		if l.Kind != "" && !slices.Contains(v.Kinds, l.Kind) {
			v.Kinds = append(v.Kinds, l.Kind)
		}
	}
	s.render(w, http.StatusOK, "queue", name, v)
}

// letterView is what the dead letter page shows.
type letterView struct {
	Letter  admin.DeadLetterInfo
	Payload payloadView
}

// letter serves one dead letter's page.
func (s *Server) letter(w http.ResponseWriter, r *http.Request) {
	queue, id := r.PathValue("queue"), r.PathValue("id")
	l, err := s.admin.DeadLetter(r.Context(), queue, id)
	if err != nil {
		s.failAdmin(w, r, fmt.Sprintf("dead letter %q of %q", id, queue), err)
		return
	}
	s.render(w, http.StatusOK, "letter", "Dead letter "+id, letterView{Letter: l, Payload: showPayload(l)})
}
