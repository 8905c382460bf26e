package mgmt

import (
	"context"
	"net/url"
	"strings"
)

// Consumer is one consumer as the API lists it: the queue it consumes.
type Consumer struct {
	Tag   string `json:"consumer_tag"`
	Queue struct {
		Name string `json:"name"`
	} `json:"queue"`
}

// Consumers lists every consumer of the client's virtual host. Unlike a
// queue's consumer count in Queues, which for a quorum queue also counts
// a consumer cancelled while it holds unacked messages, it lists only the
// consumers that are still attached.
func (c *Client) Consumers(ctx context.Context) ([]Consumer, error) {
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/consumers/" + url.PathEscape(c.vhost) +
		"?" + url.Values{"columns": {"consumer_tag,queue.name"}}.Encode()
	var cs []Consumer
	if err := c.get(ctx, u, &cs); err != nil {
		return nil, err
	}
	return cs, nil
}
