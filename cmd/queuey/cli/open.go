package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/queuey/queuey/rabbitmq"
)

// OpenRabbitMQ dials the broker at t.URL. Its error names the URL with the
// password hidden.
func OpenRabbitMQ(ctx context.Context, t Target) (Admin, func() error, error) {
	b, err := rabbitmq.Dial(ctx, t.URL, rabbitmq.Options{
		ManagementURL:  t.ManagementURL,
		ConnectionName: "queuey command",
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("broker unreachable: %w (is RabbitMQ running there? set --url or %s)", err, URLEnv)
	}
	return b, b.Close, nil
}
