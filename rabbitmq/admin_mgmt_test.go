package rabbitmq_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
)

// TestManagementOfAnotherBroker: a management API whose cluster is not
// the AMQP connection's is not read: listing fails with
// ErrManagementMismatch (an admin.ErrCannotList), and stats say what
// they could not see instead of counting that broker's queues. The
// broker's own API passes the same check.
func TestManagementOfAnotherBroker(t *testing.T) {
	listed := make(chan struct{}, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/api/overview":
			_ = json.NewEncoder(w).Encode(map[string]any{"cluster_name": "rabbit@elsewhere", "node": "rabbit@elsewhere-1"})
		case strings.HasPrefix(r.URL.Path, "/api/queues/"):
			listed <- struct{}{}
			_ = json.NewEncoder(w).Encode([]map[string]any{{"name": "elsewhere.jobs", "type": "classic", "arguments": map[string]any{}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	u.User = url.UserPassword("guest", "guest")
	b := dial(t, rabbitmq.Options{ManagementURL: u.String()})
	q, _ := jobQueue(t, b)

	names, err := b.Queues(ctxT(t))
	if !errors.Is(err, rabbitmq.ErrManagementMismatch) || !errors.Is(err, admin.ErrCannotList) ||
		!strings.Contains(err.Error(), `serves cluster "rabbit@elsewhere" (node "rabbit@elsewhere-1")`) || strings.Contains(strings.Join(names, " "), "elsewhere") {
		t.Errorf("Queues with another broker's management API = %v, %v; want ErrManagementMismatch naming its cluster, and none of its queues", names, err)
	}
	if err := b.CheckManagement(ctxT(t)); !errors.Is(err, rabbitmq.ErrManagementMismatch) {
		t.Errorf("CheckManagement = %v, want ErrManagementMismatch", err)
	}
	st, err := b.QueueStats(ctxT(t), admin.Queue{Name: q.Name})
	if err != nil || st[0].Unacked != admin.NotSeen || !strings.Contains(strings.Join(st[0].Missing, "\n"), "rabbit@elsewhere") {
		t.Errorf("QueueStats = %+v, %v; want in flight not seen, and why", st, err)
	}
	if len(listed) != 0 {
		t.Errorf("the other broker's queues were listed %d times", len(listed))
	}

	own := dial(t, rabbitmq.Options{})
	if err := own.CheckManagement(ctxT(t)); err != nil {
		t.Errorf("CheckManagement of the broker's own management API = %v, want nil", err)
	}
}
