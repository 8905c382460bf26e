package cli

import (
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// Exit codes. Each class of failure has its own, so that a script can
// tell a broker that is down from a password that is wrong.
const (
	ExitOK          = 0 // done
	ExitFailure     = 1 // failed: a queue, kind, reason or ID named matches nothing, a letter was refused, or the command did not do all it was asked
	ExitUsage       = 2 // the command line is wrong
	ExitBadURL      = 3 // --url or --management-url (or its variable) is not a URL of the right kind
	ExitUnreachable = 4 // the broker cannot be reached: connection refused, unknown host, timeout
	ExitAuth        = 5 // the broker refused the user name or password
	ExitVhost       = 6 // the URL's virtual host does not exist on the broker
	ExitPermission  = 7 // the broker refused the user the virtual host or the operation
	ExitManagement  = 8 // the management API, needed for what was asked, is missing, unreachable or refused the credentials; or it serves another broker
)

// exitCodesHelp is the table of exit codes that queuey --help shows.
const exitCodesHelp = `Exit codes: 0 done; 1 failed (a queue, kind, reason or ID named matches nothing, a letter was refused); 2 usage; 3 bad --url or --management-url; 4 broker unreachable; 5 authentication refused; 6 virtual host missing; 7 permission refused; 8 management API missing or refused, or another broker's.`

// failure is an error in the operator's words, with the exit code of its
// class.
type failure struct {
	code int
	msg  string
}

func (f *failure) Error() string { return f.msg }

// fail returns a failure of class code. Its arguments are data: each
// string formatted by %q is quoted as Go quotes it (which escapes what is
// not printable), every other passes through safe (see sprintf).
func fail(code int, format string, args ...any) error {
	f := []byte(format)
	for i, at := range verbsAt(format) {
		if i >= len(args) || f[at] != 'q' {
			continue
		}
		if s, ok := args[i].(string); ok {
			args[i] = strconv.Quote(s)
			f[at] = 's'
		}
	}
	return &failure{code: code, msg: sprintf(string(f), args...)}
}

// verbsAt returns where the verb letter of each directive in format is,
// in order: the n-th is the verb of the n-th argument.
func verbsAt(format string) []int {
	var at []int
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for i < len(format) && strings.IndexByte("+-# 0123456789.", format[i]) >= 0 {
			i++
		}
		if i < len(format) && format[i] != '%' {
			at = append(at, i)
		}
	}
	return at
}

// classify returns the exit code err means and its text for the operator.
// Errors the commands did not put in words themselves are classified by
// what they wrap: the broker's reply codes, the admin and runtime
// sentinels.
func classify(err error) (int, string) {
	var f *failure
	if errors.As(err, &f) {
		return f.code, f.msg
	}
	var u usageError
	if errors.As(err, &u) {
		return ExitUsage, u.msg
	}
	msg := plain(err)
	var ae *amqp.Error
	if errors.As(err, &ae) && (ae.Code == amqp.AccessRefused || ae.Code == amqp.NotAllowed) {
		return ExitPermission, "permission refused by the broker: " + msg
	}
	if errors.Is(err, admin.ErrCannotList) {
		return ExitManagement, msg
	}
	return ExitFailure, msg
}

// plain is err's text without the "queuey: " that the package's sentinel
// errors begin with: the command prints its own, once.
func plain(err error) string {
	msg := err.Error()
	for _, s := range sentinels(err) {
		if t, ok := strings.CutPrefix(s, "queuey: "); ok {
			msg = strings.ReplaceAll(msg, s, t)
		}
	}
	return strings.TrimPrefix(msg, "queuey: ")
}

// sentinels returns the texts of the errors err wraps that wrap nothing.
func sentinels(err error) []string {
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		if in := e.Unwrap(); in != nil {
			return sentinels(in)
		}
	case interface{ Unwrap() []error }:
		var out []string
		for _, in := range e.Unwrap() {
			out = append(out, sentinels(in)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []string{err.Error()}
}

// checkAMQPURL refuses raw, from where (a flag or a variable), unless it
// is an AMQP URL. The error does not quote it: a password may be in it.
func checkAMQPURL(where, raw string) error {
	if _, err := amqp.ParseURI(raw); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fail(ExitBadURL, "%s is not an AMQP URL (want amqp://user:password@host:port/vhost): %v", where, err)
	}
	return nil
}

// checkManagementURL refuses raw, from where, unless it is an HTTP URL.
func checkManagementURL(where, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(ExitBadURL, "%s is not a management API URL (want http://user:password@host:15672/)", where)
	}
	return nil
}

// dialFailure puts err, from dialling the broker at rawURL (a valid AMQP
// URL), in the operator's words.
func dialFailure(rawURL string, err error) error {
	uri, _ := amqp.ParseURI(rawURL)
	at := uri.Host
	if uri.Port != 0 {
		at = net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port))
	}
	vhost := uri.Vhost
	if vhost == "" {
		vhost = "/"
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		switch {
		case ae.Code == amqp.AccessRefused:
			return fail(ExitAuth, "authentication refused by the broker at %s: user %q with the password given (--url or $%s) is not accepted: %s", at, uri.Username, URLEnv, ae.Reason)
		case ae.Code == amqp.NotAllowed && strings.Contains(ae.Reason, "not found"):
			return fail(ExitVhost, "virtual host %q does not exist on the broker at %s (the path of --url or $%s names it; %q is the default one)", vhost, at, URLEnv, "/")
		case ae.Code == amqp.NotAllowed:
			return fail(ExitPermission, "permission refused: the broker at %s does not let user %q use virtual host %q: %s", at, uri.Username, vhost, ae.Reason)
		}
	}
	if errors.Is(err, runtime.ErrInvalidOption) {
		return fail(ExitBadURL, "%s", plain(err))
	}
	cause := plain(err)
	var ne *net.OpError
	if errors.As(err, &ne) {
		cause = ne.Err.Error()
	} else if ae != nil {
		cause = ae.Reason
	}
	return fail(ExitUnreachable, "broker unreachable at %s: %s (is RabbitMQ running there? set --url or $%s)", at, cause, URLEnv)
}
