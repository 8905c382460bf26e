package runtime

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/queuey/queuey/internal/rules/errs"
)

// MaxJobIDLen is the longest job ID, in bytes: the ID travels as the AMQP
// message id, a short string of at most 255 bytes.
const MaxJobIDLen = 255

// CheckJobID returns an error wrapping ErrInvalidOption, naming the rule,
// when id cannot be a job ID: empty, longer than MaxJobIDLen bytes, not
// valid UTF-8 (the wire format's rule for the message id), or holding a
// NUL byte (which no PostgreSQL text column, and so no outbox row, can
// hold). Every producer checks WithID's ID with it before anything is
// stored or published, whatever the backend, and the outbox's relay
// checks each row's ID with it too. A job ID is a label the caller
// chooses: it need not be unique, and it is carried unchanged.
func CheckJobID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: a job ID must not be empty", ErrInvalidOption)
	case len(id) > MaxJobIDLen:
		return fmt.Errorf("%w: job ID %q is %d bytes, over %d (runtime.MaxJobIDLen: the ID travels as the AMQP message id, a short string)",
			ErrInvalidOption, errs.Clip(id), len(id), MaxJobIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: job ID %q is not valid UTF-8", ErrInvalidOption, errs.Clip(id))
	case strings.IndexByte(id, 0) >= 0:
		return fmt.Errorf("%w: job ID %q holds a NUL byte, which no PostgreSQL text (and so no outbox row) can hold", ErrInvalidOption, errs.Clip(id))
	}
	return nil
}
