// Package mgmt is a small client of the RabbitMQ management HTTP API, for
// what AMQP 0-9-1 cannot do: list the queues of a virtual host.
package mgmt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DefaultPort is the management plugin's HTTP port.
const DefaultPort = 15672

// ErrUnreachable is wrapped by errors of a management API that does not
// answer, or answers with an error status.
var ErrUnreachable = errors.New("management API not reachable")

// Client talks to one management API on behalf of one virtual host.
type Client struct {
	base  *url.URL // scheme, host and path prefix; no credentials
	user  string
	pass  string
	vhost string
	http  *http.Client
}

// URLFor returns the management API URL that goes with an AMQP URL: the
// same host on DefaultPort over http (https for amqps), with the same
// credentials.
func URLFor(amqpURL string) (string, error) {
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return "", fmt.Errorf("AMQP URL: %w", err)
	}
	scheme := "http"
	if u.Scheme == "amqps" {
		scheme = "https"
	}
	m := url.URL{Scheme: scheme, Host: net.JoinHostPort(u.Host, strconv.Itoa(DefaultPort)), Path: "/", User: url.UserPassword(u.Username, u.Password)}
	return m.String(), nil
}

// New returns a client of the management API at mgmtURL (credentials in
// its user info) for virtual host vhost.
func New(mgmtURL, vhost string) (*Client, error) {
	u, err := url.Parse(mgmtURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("management URL %q: want http(s)://user:password@host:port/", Redact(mgmtURL))
	}
	// One connection per request: calls are rare, and no idle connection
	// outlives the caller.
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}
	c := &Client{vhost: vhost, http: &http.Client{Timeout: 10 * time.Second, Transport: tr}}
	if u.User != nil {
		c.user = u.User.Username()
		c.pass, _ = u.User.Password()
	}
	u.User = nil
	c.base = u
	return c, nil
}

// String is the API's URL without credentials.
func (c *Client) String() string { return c.base.String() }

// Queue is one queue as the API lists it. The counts lag the broker by up
// to its statistics interval (5 s by default).
type Queue struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Ready     int            `json:"messages_ready"`
	Unacked   int            `json:"messages_unacknowledged"`
	Consumers int            `json:"consumers"`
	Arguments map[string]any `json:"arguments"`
	// Policy is the name of the policy that applies to the queue (read by
	// Queue; empty in Queues' list).
	Policy string `json:"policy"`
}

// Queues lists every queue of the client's virtual host.
func (c *Client) Queues(ctx context.Context) ([]Queue, error) {
	// The vhost is one path segment: "/" travels as %2F.
	u := strings.TrimSuffix(c.base.String(), "/") + "/api/queues/" + url.PathEscape(c.vhost) +
		"?" + url.Values{"columns": {"name,type,messages_ready,messages_unacknowledged,consumers,arguments"}}.Encode()
	var qs []Queue
	if err := c.get(ctx, u, &qs); err != nil {
		return nil, err
	}
	return qs, nil
}

// Overview is what the API's /api/overview says of the broker that
// serves it.
type Overview struct {
	// ClusterName is the cluster's name: the same on every node, and the
	// cluster_name an AMQP connection to any of them is told.
	ClusterName string `json:"cluster_name"`
	// Node is the node that answered.
	Node string `json:"node"`
}

// Overview reads /api/overview.
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	var o Overview
	err := c.get(ctx, strings.TrimSuffix(c.base.String(), "/")+"/api/overview", &o)
	return o, err
}

func (c *Client) get(ctx context.Context, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("management API %s: %w", c, err)
	}
	req.SetBasicAuth(c.user, c.pass)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s (is rabbitmq_management enabled? rabbitmq-plugins enable rabbitmq_management): %v", ErrUnreachable, c, redactErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		what := ""
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			what = " (the credentials were refused, or the user lacks the management or monitoring tag)"
		case http.StatusNotFound:
			what = " (no such virtual host)"
		}
		return statusError{code: resp.StatusCode, err: fmt.Errorf("%w at %s: %s%s: %s", ErrUnreachable, c, resp.Status, what, body)}
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		path, _, _ := strings.Cut(strings.TrimPrefix(u, strings.TrimSuffix(c.base.String(), "/")), "?")
		return fmt.Errorf("management API %s: decode %s: %w", c, path, err)
	}
	return nil
}

// send sends a request of method with body (JSON, or none) to u, and
// fails unless the API answers with a 2xx status.
func (c *Client) send(ctx context.Context, method, u string, body []byte) error {
	var r io.Reader
	if body != nil {
		r = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return fmt.Errorf("management API %s: %w", c, err)
	}
	req.SetBasicAuth(c.user, c.pass)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w at %s: %s: %v", ErrUnreachable, c, method, redactErr(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return statusError{code: resp.StatusCode, err: fmt.Errorf("%w at %s: %s: %s: %s", ErrUnreachable, c, method, resp.Status, msg)}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

// redactErr drops the URL, which carries no credentials here but may be
// long, from a url.Error.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Redact hides the password of a URL for messages.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable URL>"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxx")
	}
	return u.String()
}

// statusError is an answer with an error status.
type statusError struct {
	code int
	err  error
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }
