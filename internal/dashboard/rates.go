package dashboard

import (
	"context"
	"encoding/json"
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

// ManagementRates reads queues' message rates from the RabbitMQ management
// HTTP API, which averages them over its last few seconds of samples. It
// is a RateReader.
type ManagementRates struct {
	base  url.URL // scheme and host, no credentials
	user  string
	pass  string
	vhost string
	http  *http.Client
}

var _ RateReader = (*ManagementRates)(nil)

// ManagementPort is the port of the management API that NewManagementRates
// assumes.
const ManagementPort = 15672

// NewManagementRates returns a reader of the management API for the
// virtual host of amqpURL. The API is at managementURL (http or https, with
// credentials in its user info), or, when that is empty, on amqpURL's host
// at ManagementPort, over https for amqps, with amqpURL's credentials.
func NewManagementRates(amqpURL, managementURL string) (*ManagementRates, error) {
	u, err := amqp.ParseURI(amqpURL)
	if err != nil {
		return nil, fmt.Errorf("dashboard: broker URL %s: %w", Redact(amqpURL), err)
	}
	m := &ManagementRates{user: u.Username, pass: u.Password, vhost: u.Vhost, http: &http.Client{Timeout: 5 * time.Second}}
	if managementURL == "" {
		scheme := "http"
		if u.Scheme == "amqps" {
			scheme = "https"
		}
		m.base = url.URL{Scheme: scheme, Host: net.JoinHostPort(u.Host, strconv.Itoa(ManagementPort))}
		return m, nil
	}
	mu, err := url.Parse(managementURL)
	if err != nil || mu.Host == "" || (mu.Scheme != "http" && mu.Scheme != "https") {
		return nil, fmt.Errorf("dashboard: management URL %s: want http(s)://user:password@host:port/", Redact(managementURL))
	}
	if mu.User != nil {
		m.user = mu.User.Username()
		m.pass, _ = mu.User.Password()
	}
	m.base = url.URL{Scheme: mu.Scheme, Host: mu.Host, Path: strings.TrimSuffix(mu.Path, "/")}
	return m, nil
}

// mgmtQueue is the part of the API's queue listing that holds rates.
type mgmtQueue struct {
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

// MessageRates returns the publish and ack rates of every queue of the
// virtual host, by name.
func (m *ManagementRates) MessageRates(ctx context.Context) (map[string]Rates, error) {
	u := m.base
	u.Path = m.base.Path + "/api/queues/" + m.vhost
	u.RawPath = m.base.EscapedPath() + "/api/queues/" + url.PathEscape(m.vhost)
	u.RawQuery = url.Values{"columns": {"name,message_stats.publish_details.rate,message_stats.ack_details.rate"}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(m.user, m.pass)
	resp, err := m.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("management API at %s not reachable (rabbitmq-plugins enable rabbitmq_management turns it on): %w", m.base.String(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return nil, fmt.Errorf("management API at %s: %s: %s", m.base.String(), resp.Status, body)
	}
	var qs []mgmtQueue
	if err := json.NewDecoder(resp.Body).Decode(&qs); err != nil {
		return nil, fmt.Errorf("management API at %s: queue list: %w", m.base.String(), err)
	}
	out := make(map[string]Rates, len(qs))
	for _, q := range qs {
		out[q.Name] = Rates{Published: q.Stats.Publish.Rate, Handled: q.Stats.Ack.Rate}
	}
	return out, nil
}
