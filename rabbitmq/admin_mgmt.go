package rabbitmq

import (
	"context"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

// ErrManagementMismatch is wrapped by the errors of the admin methods that
// need the management API when the API at hand serves another broker than
// the one the AMQP connection reaches: its lists and counts would be that
// broker's. It wraps admin.ErrCannotList.
var ErrManagementMismatch = fmt.Errorf("%w: another broker's management API", admin.ErrCannotList)

// mgmtCheck remembers which management API was found to serve the broker
// of the AMQP connection, or not to, by cluster name.
type mgmtCheck struct {
	mu      sync.Mutex
	url     string // the API checked
	cluster string // the AMQP connection's cluster name when checked
	err     error  // nil when the API serves that cluster
}

// mgmtAPI is the broker's management HTTP API, as far as this backend
// may read it: at url (Options.ManagementURL; empty for the one beside
// the AMQP URL of conn), once found to serve conn's broker.
type mgmtAPI struct {
	url   string
	conn  *connection
	check mgmtCheck
}

// client returns the management API client, or why there is none:
// turned off, or serving another broker than the AMQP connection's.
//
// Which broker an API serves is told by cluster names: the API's
// /api/overview and the AMQP connection's server properties each name
// the cluster, and every node of a cluster has the same name. Ports
// cannot tell: the AMQP URL may reach the broker through a proxy or a
// forwarded port, and an API on port 15672 of the AMQP URL's host (the
// default) may be another broker's. Two brokers that share a cluster name
// (one left at a default such as "rabbit@localhost") cannot be told
// apart; rabbitmqctl set_cluster_name names a cluster. A broker that
// names no cluster over AMQP is not checked.
func (a *mgmtAPI) client(ctx context.Context) (*mgmt.Client, error) {
	if a.url == ManagementOff {
		return nil, fmt.Errorf("%w: the management API is turned off (rabbitmq.Options.ManagementURL)", admin.ErrCannotList)
	}
	amqpURL := a.conn.url()
	u := a.url
	if u == "" {
		var err error
		if u, err = mgmt.URLFor(amqpURL); err != nil {
			return nil, err
		}
	}
	vhost := "/"
	if p, err := amqp.ParseURI(amqpURL); err == nil && p.Vhost != "" {
		vhost = p.Vhost
	}
	c, err := mgmt.New(u, vhost)
	if err != nil {
		return nil, err
	}
	cluster := a.conn.serverProperty("cluster_name")
	if cluster == "" {
		return c, nil
	}
	chk := &a.check
	chk.mu.Lock()
	defer chk.mu.Unlock()
	if chk.url == u && chk.cluster == cluster {
		return c, chk.err
	}
	o, err := c.Overview(ctx)
	if err != nil {
		// Not known either way; asked again next time.
		return nil, fmt.Errorf("%w: %v", admin.ErrCannotList, err)
	}
	err = nil
	if o.ClusterName != cluster {
		err = fmt.Errorf("%w: the management API at %s serves cluster %q (node %q), but the AMQP URL %s reaches cluster %q",
			ErrManagementMismatch, c, o.ClusterName, o.Node, mgmt.Redact(amqpURL), cluster)
	}
	chk.url, chk.cluster, chk.err = u, cluster, err
	if err != nil {
		return nil, err
	}
	return c, nil
}

// CheckManagement reports whether the management API that the admin
// methods use serves the broker the AMQP connection reaches: nil when it
// does (or when the broker names no cluster to check by), an error
// wrapping ErrManagementMismatch when it serves another, and one wrapping
// admin.ErrCannotList when it is turned off or does not answer. The admin
// methods check the same before they use the API; a tool calls this to
// refuse a wrong management URL up front instead of showing less.
func (b *Backend) CheckManagement(ctx context.Context) error {
	_, err := b.ops.api.client(ctx)
	return err
}
