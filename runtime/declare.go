package runtime

import (
	"context"
	"fmt"
	"sync"
)

// declareConcurrency is how many declares NewProducer and Worker.Run have
// in flight at once: each is a few broker round trips, so a start with
// many queues waits on the broker, not on the client, and a backend that
// sends many declares together (RabbitMQ pipelines them) gets enough at
// once to do so. A goroutine each, only while the declares last.
const declareConcurrency = 1024

// declareAll declares queues on b, up to declareConcurrency at once. At the
// first failure it stops starting declares, waits for those in flight, and
// returns that failure, naming its queue; queues declared by then stay
// declared, as they would one at a time.
func declareAll(ctx context.Context, b Backend, queues []QueueConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, declareConcurrency)
		once  sync.Once
		first error
	)
	for _, q := range queues {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := b.Declare(ctx, q); err != nil {
				once.Do(func() {
					first = fmt.Errorf("declare queue %q: %w", q.Name, err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
