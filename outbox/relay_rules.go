package outbox

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/runtime"
)

// rowFields are the columns of a row that checkRow judges, as read.
type rowFields struct {
	id, queue, kind  pgtype.Text
	priority         pgtype.Int2
	maxAttempts      pgtype.Int4
	headers, payload []byte
	size             pgtype.Int4
	enqueuedAt       pgtype.Timestamptz
	delayUS          int64
}

// The enqueue times the wire carries: Unix nanoseconds in an int64.
var (
	earliestEnqueue = time.Unix(0, math.MinInt64)
	latestEnqueue   = time.Unix(0, math.MaxInt64)
)

// checkRow returns why a row cannot be published as a job, or "" when it
// can: the rules a producer's enqueue keeps (runtime.CheckJobID, queue
// names, priorities, attempts, headers, sizes, delays) and those of the
// wire format, checked again for rows another program wrote, or that
// were written before the schema's rules. It sets env's headers.
func checkRow(env *runtime.Envelope, f rowFields) string {
	for _, c := range []struct {
		name  string
		valid bool
	}{{"id", f.id.Valid}, {"queue", f.queue.Valid}, {"kind", f.kind.Valid}, {"priority", f.priority.Valid},
		{"max_attempts", f.maxAttempts.Valid}, {"payload", f.size.Valid}, {"enqueued_at", f.enqueuedAt.Valid}} {
		if !c.valid {
			return c.name + " is NULL"
		}
	}
	if err := runtime.CheckJobID(env.ID); err != nil {
		return "id: " + strings.TrimPrefix(err.Error(), runtime.ErrInvalidOption.Error()+": ")
	}
	if !names.Queue(env.Queue) {
		return fmt.Sprintf("queue %q: want %s", errs.Clip(env.Queue), names.QueueRule)
	}
	if len(env.Kind) > names.MaxShortString || !utf8.ValidString(env.Kind) {
		return fmt.Sprintf("kind %q: want at most %d bytes of UTF-8", errs.Clip(env.Kind), names.MaxShortString)
	}
	if p := f.priority.Int16; p < 0 || p > 255 {
		return fmt.Sprintf("priority %d: want 0..255", p)
	}
	if n := f.maxAttempts.Int32; n < 1 || n > runtime.MaxAttemptsLimit {
		return fmt.Sprintf("max_attempts %d: want 1..%d", n, runtime.MaxAttemptsLimit)
	}
	if f.payload == nil {
		return fmt.Sprintf("payload is %d bytes, over %d (runtime.MaxJobSize)", f.size.Int32, runtime.MaxJobSize)
	}
	switch t := f.enqueuedAt; {
	case t.InfinityModifier != pgtype.Finite:
		return fmt.Sprintf("enqueued_at is %s: want a finite time", t.InfinityModifier)
	case t.Time.Before(earliestEnqueue) || t.Time.After(latestEnqueue):
		return fmt.Sprintf("enqueued_at %s: want a time the wire carries, %d to %d", t.Time.UTC().Format(time.RFC3339), earliestEnqueue.Year()+1, latestEnqueue.Year()-1)
	}
	switch d := f.delayUS; {
	case d < 0:
		return "due_at is infinity: want a finite time"
	case time.Duration(d)*time.Microsecond > runtime.MaxDeferral:
		return fmt.Sprintf("due_at is %v from now, over %v (runtime.MaxDeferral)", (time.Duration(d) * time.Microsecond).Round(time.Second), runtime.MaxDeferral)
	}
	if why := checkHeaders(env, f.headers); why != "" {
		return why
	}
	return ""
}

// checkHeaders sets env's headers from raw, a JSON object of strings (or
// null), and returns why they cannot be a job's, if they cannot.
func checkHeaders(env *runtime.Envelope, raw []byte) string {
	if raw == nil {
		return ""
	}
	if err := json.Unmarshal(raw, &env.Headers); err != nil {
		return fmt.Sprintf("headers %s: want an object of strings: %v", errs.Clip(string(raw)), err)
	}
	keys := make([]string, 0, len(env.Headers))
	for k := range env.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, runtime.ReservedHeaderPrefix):
			return fmt.Sprintf("header %q is reserved: queuey sets the headers whose names start with %q itself", errs.Clip(k), runtime.ReservedHeaderPrefix)
		case len(k) > names.MaxShortString:
			return fmt.Sprintf("header name %q is %d bytes, over %d (an AMQP short string)", errs.Clip(k), len(k), names.MaxShortString)
		}
	}
	return ""
}
