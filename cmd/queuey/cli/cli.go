// Package cli is the queuey command: its grammar, and each command run
// against a backend's admin API (admin.Inspector and
// admin.DeadLetterAdmin). Main is all of it but the process: arguments,
// environment, standard streams and the backend come in as values, so
// tests run it in process.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alecthomas/kong"
	"golang.org/x/term"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/dashboard"
)

// URLEnv and ManagementURLEnv name the environment variables that --url and
// --management-url default to.
const (
	URLEnv           = "QUEUEY_AMQP_URL"
	ManagementURLEnv = "QUEUEY_MANAGEMENT_URL"
)

// DefaultURL is the broker used when neither --url nor QUEUEY_AMQP_URL says
// another.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// Admin is what the commands need of a backend.
type Admin interface {
	admin.Inspector
	admin.DeadLetterAdmin
	admin.Pauser
}

// Target says which broker to open.
type Target struct {
	// URL is the AMQP URL.
	URL string
	// ManagementURL is the management API URL; empty means the one that
	// goes with URL.
	ManagementURL string
	// IndexDeadLetters asks for a backend that keeps an index of the
	// dead-letter queues it reads deeply, for a process that lives long
	// and reads them often (the dashboard).
	IndexDeadLetters bool
}

// Env is the world a run of the command sees.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// StdinTerminal and StderrTerminal say whether those streams are
	// terminals: confirmations are asked only on one, progress is drawn
	// only on one.
	StdinTerminal, StderrTerminal bool
	// Dir is where package patterns are resolved; empty means the current
	// directory.
	Dir string
	// Open opens the backend; nil means RabbitMQ (OpenRabbitMQ).
	Open func(ctx context.Context, t Target) (Admin, func() error, error)
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv:         os.Getenv,
		StdinTerminal:  isTerminal(os.Stdin),
		StderrTerminal: isTerminal(os.Stderr),
	}
}

// isTerminal reports whether f is a terminal. (A character device is not
// enough: /dev/null is one.)
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// grammar is the command line.
type grammar struct {
	URL           string `name:"url" placeholder:"URL" help:"AMQP URL of the broker (default: $QUEUEY_AMQP_URL, then ${default_url})."`
	ManagementURL string `name:"management-url" placeholder:"URL" help:"RabbitMQ management API URL with credentials, used to list hold queues (default: $QUEUEY_MANAGEMENT_URL, then the broker's host on port 15672 with the same credentials)."`
	JSON          bool   `name:"json" help:"Print machine-readable JSON instead of tables."`

	Queues queuesCmd `cmd:"" help:"Show queues (paused, ready, unacked, waiting, dead, consumers); pause, resume, purge or delete one."`
	Dead   deadCmd   `cmd:"" help:"Look at, re-drive and purge dead letters."`
	// Ladder counts the delay ladders (delay=ladder) and puts back the
	// waits whose queue was deleted while they waited.
	Ladder ladderCmd `cmd:"" help:"Show the delay ladders (delay=ladder); list and re-drive the waits whose queue was deleted while they waited."`
	// Dashboard serves the same in the browser.
	Dashboard dashboardCmd `cmd:"" help:"Serve the web dashboard: queues, dead letters, re-drive and purge in the browser."`
	// Outbox relays an application's transactional outbox (package
	// outbox) to the broker.
	Outbox outboxCmd `cmd:"" help:"Relay jobs committed to a PostgreSQL outbox to the broker; show its backlog and dead rows, put them back; create its tables."`
}

type deadCmd struct {
	Ls      lsCmd      `cmd:"" help:"List a queue's dead letters, oldest first, without removing them."`
	Show    showCmd    `cmd:"" help:"Show one dead letter with its payload, without removing it."`
	Redrive redriveCmd `cmd:"" help:"Put dead letters back on their queue with a fresh attempt count. Asks for confirmation."`
	Purge   purgeCmd   `cmd:"" help:"Delete dead letters. Asks for confirmation."`
}

// run is one run of a command: the global flags, the environment, and
// how to open the backend.
type run struct {
	ctx  context.Context
	g    *grammar
	env  Env
	open func() (Admin, func() error, error)
	// indexed is open for a long-lived process: see
	// Target.IndexDeadLetters.
	indexed func() (Admin, func() error, error)
}

// usageError is a command line that parses but asks for something
// impossible.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitRequest carries kong's exit (after --help) out of Parse.
type exitRequest int

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, args []string, env Env) (code int) {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	var g grammar
	parser, err := newParser(&g, env)
	if err != nil {
		fmt.Fprintln(env.Stderr, "queuey: internal error:", err)
		return ExitFailure
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		printf(env.Stderr, "queuey: %v\n", err)
		fmt.Fprintln(env.Stderr, "run queuey --help for usage")
		return ExitUsage
	}
	if err := g.resolve(env); err != nil {
		return report(env, err)
	}
	open := env.Open
	if open == nil {
		open = OpenRabbitMQ
	}
	r := &run{ctx: ctx, g: &g, env: env, open: func() (Admin, func() error, error) {
		return open(ctx, Target{URL: g.URL, ManagementURL: g.ManagementURL})
	}, indexed: func() (Admin, func() error, error) {
		return open(ctx, Target{URL: g.URL, ManagementURL: g.ManagementURL, IndexDeadLetters: true})
	}}
	return report(env, kctx.Run(r))
}

// newParser returns the parser of the command line into g.
func newParser(g *grammar, env Env) (*kong.Kong, error) {
	return kong.New(g,
		kong.Name("queuey"),
		kong.Description("Operate queuey queues on RabbitMQ: see every queue and dead letter, re-drive and purge them, relay an outbox.\n\n"+confirmHelp+"\n\n"+exitCodesHelp),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Vars{"default_url": DefaultURL, "dashboard_addr": dashboard.DefaultAddr},
		kong.Exit(func(c int) { panic(exitRequest(c)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
}

// resolve fills the URLs from the environment and the defaults, and
// checks them.
func (g *grammar) resolve(env Env) error {
	where := "--url"
	if g.URL == "" {
		g.URL, where = env.Getenv(URLEnv), "$"+URLEnv
	}
	if g.URL == "" {
		g.URL, where = DefaultURL, "the default URL"
	}
	if err := checkAMQPURL(where, g.URL); err != nil {
		return err
	}
	where = "--management-url"
	if g.ManagementURL == "" {
		g.ManagementURL, where = env.Getenv(ManagementURLEnv), "$"+ManagementURLEnv
	}
	if g.ManagementURL != "" {
		return checkManagementURL(where, g.ManagementURL)
	}
	return nil
}

// report prints err, if any, and returns the exit code it means.
func report(env Env, err error) int {
	if err == nil {
		return ExitOK
	}
	code, msg := classify(err)
	// Line by line: an error may join several, one a line, and each
	// line may quote text from the broker or its users.
	lines := strings.Split(msg, "\n")
	for i, line := range lines {
		lines[i] = safe(line)
	}
	fmt.Fprintf(env.Stderr, "queuey: %s\n", strings.Join(lines, "\n"))
	if code == ExitUsage {
		fmt.Fprintln(env.Stderr, "run queuey --help for usage")
	}
	return code
}
