package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// DefaultPageSize is how many dead letters a queue page shows when
// Options.PageSize is zero.
const DefaultPageSize = 50

//go:embed static
var staticFS embed.FS

// Options configure a dashboard. The zero value serves a read-write
// dashboard with no known queue configurations.
type Options struct {
	// ReadOnly hides the actions and refuses every POST with 403.
	ReadOnly bool
	// Broker is shown in the page header. Pass it through Redact first;
	// New redacts it again in case.
	Broker string
	// Configs are the queues' configurations as resolved from their
	// annotations, shown on a queue's page where one matches its name.
	Configs []runtime.QueueConfig
	// OnlyConfigured lists only the queues of Configs on the overview,
	// instead of every queue the Admin finds.
	OnlyConfigured bool
	// PageSize is how many dead letters a page shows. Zero means
	// DefaultPageSize.
	PageSize int
	// Counts feeds the throughput chart. Nil means the Admin, when it is a
	// CountReader (as the RabbitMQ backend is); without one the chart shows
	// depth only.
	Counts CountReader
	// LoopbackOnly refuses requests whose Host header is not a loopback
	// name or address (localhost, 127.0.0.0/8, ::1), which stops DNS
	// rebinding from reaching a dashboard bound to loopback. Serve sets it
	// when it listens on loopback.
	LoopbackOnly bool
	// Outbox, when set, is read for a panel of the overview: a
	// transactional outbox's backlog and dead rows, by queue
	// (outbox.StatsReader makes one of a database pool).
	Outbox admin.OutboxReader
	// Logger receives errors of the Admin. Nil means slog.Default().
	Logger *slog.Logger
}

// Server is the dashboard's http.Handler. It samples every queue's stats
// from New until Close, for the charts of the last ten minutes.
type Server struct {
	admin   Admin
	opts    Options
	configs map[string]runtime.QueueConfig
	token   string
	pages   *pages
	hist    *history
	handler http.Handler
}

// New returns a dashboard over admin.
func New(admin Admin, opts Options) (*Server, error) {
	if admin == nil {
		return nil, fmt.Errorf("dashboard: admin is nil")
	}
	if opts.PageSize < 0 {
		return nil, fmt.Errorf("dashboard: Options.PageSize = %d, want 0 (default %d) or more", opts.PageSize, DefaultPageSize)
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Broker = Redact(opts.Broker)
	if r, ok := admin.(CountReader); ok && opts.Counts == nil {
		opts.Counts = r
	}
	pg, err := parsePages()
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("dashboard: form token: %w", err)
	}
	s := &Server{
		admin:   admin,
		opts:    opts,
		configs: map[string]runtime.QueueConfig{},
		token:   hex.EncodeToString(tok),
		pages:   pg,
	}
	for _, c := range opts.Configs {
		s.configs[c.Name] = c.WithDefaults()
	}
	s.handler = s.routes()
	s.hist = newHistory(historyLength, time.Now, s.takeSnapshot)
	s.hist.start(sampleEvery)
	return s, nil
}

// Close stops the sampling of the charts' history, which runs from New on
// whether or not a page is open. Call it when the dashboard is no longer
// served.
func (s *Server) Close() error {
	s.hist.stop()
	return nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /api/stats", s.stats)
	mux.HandleFunc("GET /api/charts", s.chartsJSON)
	mux.HandleFunc("GET /queues/{queue}", s.queue)
	mux.HandleFunc("GET /queues/{queue}/dead/{id}", s.letter)
	mux.HandleFunc("POST /queues/{queue}/redrive", s.action(actRedrive))
	mux.HandleFunc("POST /queues/{queue}/purge", s.action(actPurge))
	mux.HandleFunc("POST /queues/{queue}/pause", s.action(actPause))
	mux.HandleFunc("POST /queues/{queue}/resume", s.action(actResume))
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, "refused: this request comes from another origin")
	}))
	return s.guard(cop.Handler(mux))
}

// ServeHTTP serves the dashboard.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// guard sets the security headers of every response and checks the Host
// header, the read-only mode and the form token of every POST.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if s.opts.LoopbackOnly && !loopbackHost(r.Host) {
			s.fail(w, r, http.StatusMisdirectedRequest, fmt.Sprintf("refused: host %q is not a loopback name; this dashboard answers only to localhost", r.Host))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if s.opts.ReadOnly {
				s.fail(w, r, http.StatusForbidden, "refused: this dashboard is read-only")
				return
			}
			if r.Method == http.MethodPost && !s.tokenOK(w, r) {
				s.fail(w, r, http.StatusForbidden, "refused: the form token is missing or wrong; reload the page and try again")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	got := r.PostFormValue("token")
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// maxFormBytes bounds a POSTed form: a page of selected IDs fits many times.
const maxFormBytes = 1 << 20

// loopbackHost reports whether hostport names this machine by a loopback
// name or address.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// config returns the resolved configuration of queue when it is known, and
// a config naming only the queue otherwise.
func (s *Server) config(queue string) runtime.QueueConfig {
	if c, ok := s.configs[queue]; ok {
		return c
	}
	return runtime.QueueConfig{Name: queue}
}
