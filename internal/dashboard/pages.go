package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

//go:embed templates
var templateFS embed.FS

// pageNames are the templates/*.html files that are whole pages; each is
// parsed together with layout.html.
var pageNames = []string{"overview", "queue", "letter", "confirm", "result", "error"}

type pages struct {
	t map[string]*template.Template
}

var funcs = template.FuncMap{
	"path":  url.PathEscape,
	"count": countText,
	"dur":   func(d time.Duration) string { return d.String() },
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000 UTC") },
	// at is t exact, for a machine: a datetime attribute, a tooltip.
	"at":    func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"num":   countCell,
	"lower": strings.ToLower,
}

func parsePages() (*pages, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/outbox.html", "templates/ladders.html", "templates/limits.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: templates: %w", err)
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: templates: %w", err)
		}
		p.t[name] = t
	}
	return p, nil
}

// view is what every page template gets.
type view struct {
	Title    string
	Broker   string
	ReadOnly bool
	Token    string
	Data     any
}

// render writes page name with data, or a plain 500 when the template
// fails, so that no half page is sent.
func (s *Server) render(w http.ResponseWriter, status int, name, title string, data any) {
	var buf bytes.Buffer
	v := view{Title: title, Broker: s.opts.Broker, ReadOnly: s.opts.ReadOnly, Token: s.token, Data: data}
	if err := s.pages.t[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		s.opts.Logger.Error("queuey dashboard: render", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail renders the error page with status and msg.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, status, "error", http.StatusText(status), msg)
}

// failAdmin renders an error of the Admin: 404 for what does not exist, 502
// for anything else, which is logged.
func (s *Server) failAdmin(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, admin.ErrDeadLetterNotFound) || errors.Is(err, runtime.ErrUnknownQueue) {
		s.fail(w, r, http.StatusNotFound, what+": "+err.Error())
		return
	}
	s.opts.Logger.Error("queuey dashboard: "+what, "err", err)
	s.fail(w, r, http.StatusBadGateway, what+": "+err.Error())
}

// countText says n things: "1 dead letter", "3 dead letters".
func countText(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// countCell shows a count, or "?" for one that is not known (-1).
func countCell(n int) string {
	if n < 0 {
		return "?"
	}
	return strconv.Itoa(n)
}
