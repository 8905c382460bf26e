package mgmt

import (
	"context"
	"net/url"
	"strings"
)

// Rates are a queue's message rates per second, as the API averages them
// over its last samples.
type Rates struct {
	// Published is the rate of messages published onto the queue.
	Published float64
	// Acked is the rate of deliveries acked by its consumers.
	Acked float64
}

// rateColumns is what the API lists of each queue for Rates: nested
// fields are named by dotted paths.
const rateColumns = "name,message_stats.publish_details.rate,message_stats.ack_details.rate"

// Rates returns the rates of every queue of the client's virtual host, by
// name. A queue with no traffic yet has zero rates.
func (c *Client) Rates(ctx context.Context) (map[string]Rates, error) {
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/queues/" + url.PathEscape(c.vhost) +
		"?" + url.Values{"columns": {rateColumns}}.Encode()
	var qs []struct {
		Name  string `json:"name"`
		Stats struct {
			Publish struct {
				Rate float64 `json:"rate"`
			} `json:"publish_details"`
			Ack struct {
				Rate float64 `json:"rate"`
			} `json:"ack_details"`
		} `json:"message_stats"`
	}
	if err := c.get(ctx, u, &qs); err != nil {
		return nil, err
	}
	out := make(map[string]Rates, len(qs))
	for _, q := range qs {
		out[q.Name] = Rates{Published: q.Stats.Publish.Rate, Acked: q.Stats.Ack.Rate}
	}
	return out, nil
}
