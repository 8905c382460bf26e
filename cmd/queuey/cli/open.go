package cli

import (
	"context"
	"io"
	"log/slog"

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
	return b, b.Close, nil
}
