package cli

import (
	"github.com/queuey/queuey/internal/dashboard"
	"github.com/queuey/queuey/runtime"
)

type dashboardCmd struct {
	Addr     string   `name:"addr" default:"${dashboard_addr}" help:"Address to serve on. Loopback keeps the dashboard to this machine; any other address lets whoever reaches it re-drive and purge."`
	ReadOnly bool     `name:"read-only" help:"Hide and refuse re-drive and purge."`
	Packages []string `name:"pkg" placeholder:"PACKAGE" help:"Show only the queues of these Go packages' //queuey:queue annotations, configured from them (e.g. ./jobs/...; repeat --pkg for more). Without it, every queue the broker knows."`
	database          // the outbox whose backlog and dead rows a panel shows, if any
}

func (c *dashboardCmd) Run(r *run) error {
	var configs []runtime.QueueConfig
	if len(c.Packages) > 0 {
		var err error
		if configs, err = annotatedQueues(r.env.Dir, c.Packages); err != nil {
			return err
		}
	}
	be, closeFn, err := r.indexed()
	if err != nil {
		return err
	}
	defer closeFn()
	opts := dashboard.Options{
		ReadOnly:       c.ReadOnly,
		Broker:         r.g.URL,
		Configs:        configs,
		OnlyConfigured: len(c.Packages) > 0,
	}
	ob, closeOutbox, err := c.outboxPanel(r)
	if err != nil {
		return err
	}
	defer closeOutbox()
	opts.Outbox = ob
	ln, loopback, err := dashboard.Listen(c.Addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	defer ln.Close()
	opts.LoopbackOnly = loopback
	srv, err := dashboard.New(be, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	mode := ""
	if c.ReadOnly {
		mode = ", read-only"
	}
	printf(r.env.Stdout, "queuey dashboard: http://%s/ over %s%s (Ctrl-C stops)\n", ln.Addr(), dashboard.Redact(r.g.URL), mode)
	if !loopback {
		printf(r.env.Stderr, "queuey dashboard: warning: %s is not a loopback address; whoever reaches it can re-drive and purge\n", c.Addr)
	}
	return dashboard.Serve(r.ctx, ln, srv)
}
