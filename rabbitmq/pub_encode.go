package rabbitmq

import (
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// encoder makes the publishes of jobs: codec's encoding, with the size
// rules of this broker and connection.
type encoder struct {
	// maxBody is the broker's max message size (Options.MaxMessageSize).
	maxBody int
	// fit is what the publishing connection takes in one publish.
	fit func() codec.Limits
}

// encode is codec.Encode with the size checks of encodeAppend.
func (e encoder) encode(env *runtime.Envelope, o codec.Options) (amqp.Publishing, error) {
	msg, _, err := e.encodeAppend(nil, env, o)
	return msg, err
}

// encodeAppend is codec.EncodeAppend. A job whose payload alone is over
// the max message size is refused before it is encoded
// (codec.CheckPayload).
func (e encoder) encodeAppend(dst []byte, env *runtime.Envelope, o codec.Options) (amqp.Publishing, []byte, error) {
	if env != nil {
		if err := codec.CheckPayload(env, codec.Limits{MaxBody: e.maxBody}); err != nil {
			return amqp.Publishing{}, dst, fmt.Errorf("publish to %q: %w", errs.Clip(env.Queue), err)
		}
	}
	return codec.EncodeAppend(dst, env, o)
}

// encodeCopy is encode of a copy of a job already on the broker (a
// retry, a deferral, a dead letter, a redelivery, a re-drive): made to fit
// what the publishing connection takes (codec.Options.Fit), so that the
// copy is never refused and the job never stuck where it is.
func (e encoder) encodeCopy(env *runtime.Envelope, o codec.Options) (amqp.Publishing, error) {
	o.Fit = e.fit()
	return e.encode(env, o)
}

// encodeDead is the publish that moves env to the dead-letter queue for
// reason: the job, with the dead-letter headers, the time it died among
// them (codec.HeaderDeadAt), fitted to one frame.
func (e encoder) encodeDead(env *runtime.Envelope, reason string) (amqp.Publishing, error) {
	return e.encodeCopy(env, codec.Options{DeadReason: reason, DeadAt: deadNow()})
}

// deadNow is the time a letter dead-lettered now records, in UTC.
func deadNow() time.Time { return time.Now().UTC() }
