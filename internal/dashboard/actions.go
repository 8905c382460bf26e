package dashboard

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/queuey/queuey/admin"
)

// act is a state-changing action on one queue or on its dead letters.
type act struct {
	// Verb names the action in titles ("Re-drive"), Past in results, Path
	// in URLs.
	Verb, Past, Path string
	// What says what it does, and Yes labels its button, on the
	// confirmation page.
	What, Yes string
	// OnQueue is set for the actions on the queue itself (pause, resume),
	// which select no dead letters.
	OnQueue bool
}

var (
	actRedrive = act{Verb: "Re-drive", Past: "Re-drove", Path: "redrive", What: "put back on the queue with a fresh attempt count", Yes: "Yes, re-drive"}
	actPurge   = act{Verb: "Purge", Past: "Purged", Path: "purge", What: "deleted for good", Yes: "Yes, purge"}
	actPause   = act{Verb: "Pause", Past: "Paused", Path: "pause", What: "paused: its workers take none of its jobs (those running finish) until it is resumed; enqueues go on", Yes: "Yes, pause", OnQueue: true}
	actResume  = act{Verb: "Resume", Past: "Resumed", Path: "resume", What: "resumed: its workers take its jobs again", Yes: "Yes, resume", OnQueue: true}
)

// maxIDs bounds the IDs one request may select.
const maxIDs = 1000

// confirmView is what the confirmation page shows.
type confirmView struct {
	Act   act
	Queue string
	Sel   admin.DeadLetterSelector
	Dead  int // dead letters of the queue, for "all"
}

// resultView is what the result page shows.
type resultView struct {
	Act      act
	Queue    string
	Done     int
	Refused  []admin.RefusedLetter
	NotFound []string
	Err      string
}

// action serves POST /queues/{queue}/{redrive,purge}. Without confirm=yes it
// only shows what would happen and asks to confirm; with it, it acts and
// shows the result. The guard has checked the token and read-only mode.
func (s *Server) action(a act) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		queue := r.PathValue("queue")
		if a.OnQueue {
			s.queueAction(w, r, a, queue)
			return
		}
		sel, err := selection(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		if r.PostFormValue("confirm") != "yes" {
			stats, err := s.admin.QueueStats(r.Context(), admin.QueueOf(s.config(queue)))
			if err != nil {
				s.failAdmin(w, r, fmt.Sprintf("queue %q", queue), err)
				return
			}
			s.render(w, http.StatusOK, "confirm", a.Verb+" dead letters of "+queue+"?", confirmView{Act: a, Queue: queue, Sel: sel, Dead: stats[0].Dead})
			return
		}
		v := resultView{Act: a, Queue: queue}
		if a == actRedrive {
			var res admin.RedriveResult
			res, err = s.admin.RedriveDeadLetters(r.Context(), queue, sel, nil)
			v.Done, v.Refused, v.NotFound = len(res.Moved), res.Refused, res.NotFound
		} else {
			var res admin.PurgeResult
			res, err = s.admin.PurgeDeadLetters(r.Context(), queue, sel)
			v.Done, v.NotFound = res.Purged, res.NotFound
		}
		status := http.StatusOK
		if err != nil {
			v.Err = err.Error()
			status = http.StatusBadGateway
			s.opts.Logger.Error("queuey dashboard: "+a.Path, "queue", queue, "done", v.Done, "err", err)
		}
		s.render(w, status, "result", a.Past+" dead letters of "+queue, v)
	}
}

// queueAction pauses or resumes queue, after the confirmation, when the
// Admin is an admin.Pauser.
func (s *Server) queueAction(w http.ResponseWriter, r *http.Request, a act, queue string) {
	p, ok := s.admin.(admin.Pauser)
	if !ok {
		s.fail(w, r, http.StatusNotImplemented, a.Verb+": this backend cannot pause queues")
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		if _, err := s.admin.QueueStats(r.Context(), admin.QueueOf(s.config(queue))); err != nil {
			s.failAdmin(w, r, fmt.Sprintf("queue %q", queue), err)
			return
		}
		s.render(w, http.StatusOK, "confirm", a.Verb+" queue "+queue+"?", confirmView{Act: a, Queue: queue})
		return
	}
	var err error
	if a == actPause {
		err = p.PauseQueue(r.Context(), queue)
	} else {
		err = p.ResumeQueue(r.Context(), queue)
	}
	v := resultView{Act: a, Queue: queue}
	status := http.StatusOK
	if err != nil {
		v.Err = err.Error()
		status = http.StatusBadGateway
		s.opts.Logger.Error("queuey dashboard: "+a.Path, "queue", queue, "err", err)
	}
	s.render(w, status, "result", a.Past+" "+queue, v)
}

// selection reads which dead letters a form selects: all=yes, one or more
// id fields, or a reason (a part of it) and a kind, each when not empty.
func selection(r *http.Request) (admin.DeadLetterSelector, error) {
	sel := admin.DeadLetterSelector{
		All:    r.PostFormValue("all") == "yes",
		Reason: strings.TrimSpace(r.PostFormValue("reason")),
		Kind:   strings.TrimSpace(r.PostFormValue("kind")),
	}
	for _, id := range r.PostForm["id"] {
		if id != "" && !slices.Contains(sel.IDs, id) {
			sel.IDs = append(sel.IDs, id)
		}
	}
	byMatch := sel.Reason != "" || sel.Kind != ""
	switch {
	case sel.All && len(sel.IDs) > 0:
		return sel, fmt.Errorf("choose either all dead letters or some by ID, not both")
	case byMatch && (sel.All || len(sel.IDs) > 0):
		return sel, fmt.Errorf("choose dead letters either by reason and kind, or all, or by ID; not more than one way")
	case sel.Empty():
		return sel, fmt.Errorf("no dead letter selected: tick at least one, give a reason or kind, or use the button for all")
	case len(sel.IDs) > maxIDs:
		return sel, fmt.Errorf("%d dead letters selected; at most %d at once", len(sel.IDs), maxIDs)
	}
	return sel, nil
}
