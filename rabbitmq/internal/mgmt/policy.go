package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// Policy is a policy or an operator policy of a virtual host, as the API
// lists it.
type Policy struct {
	Name       string         `json:"name"`
	Pattern    string         `json:"pattern"`
	ApplyTo    string         `json:"apply-to"`
	Priority   int            `json:"priority"`
	Definition map[string]any `json:"definition"`
}

// Policies lists the policies of the client's virtual host.
func (c *Client) Policies(ctx context.Context) ([]Policy, error) {
	return c.policies(ctx, "policies")
}

// OperatorPolicies lists the operator policies of the client's virtual
// host (the API lets only administrators read them).
func (c *Client) OperatorPolicies(ctx context.Context) ([]Policy, error) {
	return c.policies(ctx, "operator-policies")
}

func (c *Client) policies(ctx context.Context, kind string) ([]Policy, error) {
	var ps []Policy
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/" + kind + "/" + url.PathEscape(c.vhost)
	if err := c.get(ctx, u, &ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// Applying returns the policy of ps that applies to the queue named queue
// of type typ ("classic", "quorum", "stream"), as the broker picks it: of
// those whose pattern matches the name and whose apply-to takes the
// queue, the one of highest priority. A pattern Go's regexp cannot read
// is passed over. ok is false when none applies.
func Applying(ps []Policy, queue, typ string) (p Policy, ok bool) {
	for _, c := range ps {
		switch c.ApplyTo {
		case "all", "queues", typ + "_queues":
		case "streams":
			if typ != "stream" {
				continue
			}
		default:
			continue
		}
		re, err := regexp.Compile(c.Pattern)
		if err != nil || !re.MatchString(queue) {
			continue
		}
		if !ok || c.Priority > p.Priority {
			p, ok = c, true
		}
	}
	return p, ok
}

// DeliveryLimit returns the delivery limit that the policy and the
// operator policy applying to a queue (Applying) set, and the name of the
// policy it comes from: the lower of the two where both set one, a
// negative one setting none, as the broker resolves them. A queue
// argument cannot lift it. ok is false when neither sets a limit.
func DeliveryLimit(policy, operator []Policy, queue, typ string) (limit int, from string, ok bool) {
	for _, ps := range [][]Policy{policy, operator} {
		p, applies := Applying(ps, queue, typ)
		if !applies {
			continue
		}
		v, isNum := p.Definition["delivery-limit"].(float64)
		if !isNum || v < 0 {
			continue
		}
		if !ok || int(v) < limit {
			limit, from, ok = int(v), p.Name, true
		}
	}
	return limit, from, ok
}

// PutPolicy sets p, a policy of the client's virtual host (replacing one
// of the same name).
func (c *Client) PutPolicy(ctx context.Context, p Policy) error {
	body, err := json.Marshal(map[string]any{"pattern": p.Pattern, "apply-to": p.ApplyTo, "priority": p.Priority, "definition": p.Definition})
	if err != nil {
		return fmt.Errorf("management API %s: policy %q: %w", c, p.Name, err)
	}
	return c.send(ctx, http.MethodPut, c.policyURL(p.Name), body)
}

// DeletePolicy deletes the policy called name of the client's virtual
// host; one that does not exist is not an error.
func (c *Client) DeletePolicy(ctx context.Context, name string) error {
	err := c.send(ctx, http.MethodDelete, c.policyURL(name), nil)
	var se statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return nil
	}
	return err
}

func (c *Client) policyURL(name string) string {
	return strings.TrimSuffix(c.base.String(), "/") + "/api/policies/" + url.PathEscape(c.vhost) + "/" + url.PathEscape(name)
}
