package mgmt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrNotFound is returned by Queue for a queue the API does not know.
var ErrNotFound = errors.New("not found")

// Queue returns the queue called name, or an error wrapping ErrNotFound.
func (c *Client) Queue(ctx context.Context, name string) (Queue, error) {
	u := c.queueURL(name) + "?" + url.Values{"columns": {"name,type,messages_ready,messages_unacknowledged,consumers,arguments,policy"}}.Encode()
	var q Queue
	if err := c.getFound(ctx, u, &q); err != nil {
		return Queue{}, err
	}
	return q, nil
}

// Binding is one binding of a queue to an exchange, as the API lists it.
type Binding struct {
	Source     string         `json:"source"`
	RoutingKey string         `json:"routing_key"`
	Arguments  map[string]any `json:"arguments"`
}

// Bindings lists the bindings of queue name, its default exchange's left
// out (every queue has it). A queue the API does not know is ErrNotFound.
func (c *Client) Bindings(ctx context.Context, name string) ([]Binding, error) {
	var bs []Binding
	if err := c.getFound(ctx, c.queueURL(name)+"/bindings", &bs); err != nil {
		return nil, err
	}
	out := bs[:0]
	for _, b := range bs {
		if b.Source != "" {
			out = append(out, b)
		}
	}
	return out, nil
}

func (c *Client) queueURL(name string) string {
	return strings.TrimSuffix(c.base.String(), "/") + "/api/queues/" + url.PathEscape(c.vhost) + "/" + url.PathEscape(name)
}

// getFound is get, with a 404 (no such queue) wrapping ErrNotFound.
func (c *Client) getFound(ctx context.Context, u string, into any) error {
	err := c.get(ctx, u, into)
	var se statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}
