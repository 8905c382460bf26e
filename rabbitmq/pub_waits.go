package rabbitmq

import (
	"context"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// waitChannels is how many confirm-mode channels carry waits: publishes
// to hold queues and to delay exchanges. A publish to a classic hold queue
// holds its channel for a round trip (the declare after it), so waits in
// flight at once are as many as these channels: 16 made 64 concurrent
// delayed enqueues about twice as fast as 2 (bench BenchmarkWaitPublish).
// They are opened on first use.
const waitChannels = 16

// ladderChannels is how many confirm-mode channels carry ladder waits. A
// ladder wait is a plain publish, holding its channel for no round trip,
// so one channel carries all of them, many in flight: the broker's CPU
// per wait falls with the channels they are spread over. 1,000 one-delay
// deferrals on the quorum ladder (bench BenchmarkScaleWaits, alternating
// builds, four rounds each, 2 cores) ran 7,331-9,371/s on 1 channel,
// 7,278-8,850/s on 2, 6,355-8,174/s on 4 and 6,410-7,943/s on 16.
const ladderChannels = 1

// publishWait publishes a wait through the delayed-message-exchange plugin,
// confirmed but not mandatory (the plugin routes nothing at publish time,
// so it returns every mandatory publish), on the channels of plugin waits.
func (p *publisher) publishWait(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	s := p.waits[int(p.nextWait.Add(1))%len(p.waits)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, false)
}

// publishLadder publishes a wait to an exchange of a delay ladder,
// mandatory and confirmed, on the channel of ladder waits: a publish to an
// exchange that is gone closes the channel it came on, and enqueues do not
// share it.
func (p *publisher) publishLadder(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	s := p.ladder[int(p.nextWait.Add(1))%len(p.ladder)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, true)
}

// publishHold publishes msg to hold queue hold, mandatory and confirmed,
// followed by a declare of hold on the same channel that renews its expiry,
// and, when declareFirst says so, after a declare that makes hold exist
// (pubChannel.publishRenewing). It goes on the channels of waits: a
// declare that fails closes the channel it came on, and enqueues do not
// share those.
func (p *publisher) publishHold(ctx context.Context, hold topology.Queue, msg amqp.Publishing, declareFirst func() bool) error {
	s := p.waits[int(p.nextWait.Add(1))%len(p.waits)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publishRenewing(ctx, hold, msg, declareFirst)
}
