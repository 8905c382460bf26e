package cli

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/queuey/queuey/rabbitmq"
)

// OpenRabbitMQ dials the broker at t.URL. Its error says, in an
// operator's words, why the broker could not be used: unreachable,
// authentication refused, virtual host missing or permission refused.
func OpenRabbitMQ(ctx context.Context, t Target) (Admin, func() error, error) {
	b, err := rabbitmq.Dial(ctx, t.URL, rabbitmq.Options{
		ManagementURL:  t.ManagementURL,
		ConnectionName: "queuey command",
		// Pages deep in a dead-letter queue, and letters by ID, are read
		// from an index only by a process that reads them again.
		DeadLetterIndex: t.IndexDeadLetters,
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, nil, dialFailure(t.URL, err)
	}
	// Another broker's management API would answer every listing with
	// that broker's queues: refuse it before anything is shown. One that
	// does not answer (in time) is left to the commands that need it.
	cctx, cancel := context.WithTimeout(ctx, managementCheckTimeout)
	defer cancel()
	if err := b.CheckManagement(cctx); errors.Is(err, rabbitmq.ErrManagementMismatch) {
		_ = b.Close()
		return nil, nil, fail(ExitManagement, "%s: pass that broker's management API with --management-url or $%s", plain(err), ManagementURLEnv)
	}
	return b, b.Close, nil
}

// managementCheckTimeout bounds the check that the management API serves
// the broker --url reaches.
const managementCheckTimeout = 5 * time.Second
