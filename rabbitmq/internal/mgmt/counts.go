package mgmt

import (
	"context"
	"net/url"
	"strings"
)

// Counts are a queue's cumulative message counters since the broker
// created it (or last reset its statistics).
type Counts struct {
	// Published counts messages published onto the queue.
	Published uint64
	// Acked counts deliveries acked by its consumers.
	Acked uint64
}

// countColumns is what the API lists of each queue for Counts: nested
// fields are named by dotted paths.
const countColumns = "name,message_stats.publish,message_stats.ack"

// Counts returns the counters of every queue of the client's virtual host,
// by name. A queue with no traffic yet has zero counters.
func (c *Client) Counts(ctx context.Context) (map[string]Counts, error) {
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/queues/" + url.PathEscape(c.vhost) +
		"?" + url.Values{"columns": {countColumns}}.Encode()
	var qs []struct {
		Name  string `json:"name"`
		Stats struct {
			Publish uint64 `json:"publish"`
			Ack     uint64 `json:"ack"`
		} `json:"message_stats"`
	}
	if err := c.get(ctx, u, &qs); err != nil {
		return nil, err
	}
	out := make(map[string]Counts, len(qs))
	for _, q := range qs {
		out[q.Name] = Counts{Published: q.Stats.Publish, Acked: q.Stats.Ack}
	}
	return out, nil
}
