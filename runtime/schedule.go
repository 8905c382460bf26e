package runtime

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuey/queuey/internal/rules/names"
)

// Missed says what a schedule does with ticks that passed while no
// scheduler ran (every worker was down, or the lease was changing hands).
// A missed tick is never fired more than once, and several missed ticks
// are never fired in a burst.
type Missed string

const (
	// MissedRunOnce runs the missed ticks once: it fires the latest missed
	// tick as soon as a scheduler runs again, then goes on with the
	// schedule; unless the next tick is due within a minute and nearer
	// than the missed one (the scheduler is back in the second half of the
	// gap between them), when the next tick, fired on time, stands for
	// both. It is the default.
	MissedRunOnce Missed = "once"
	// MissedSkip fires no missed tick: the schedule goes on with the next
	// tick after the moment a scheduler runs again.
	MissedSkip Missed = "skip"
)

// Schedule makes a worker enqueue a job on its own at each tick of Spec.
type Schedule struct {
	// Name identifies the schedule across every process of a backend: one
	// lease is held per name, and each tick's job ID is Name, "@", and the
	// tick's time in UTC as RFC 3339 ("reports.daily@2026-11-30T06:00:00Z").
	// [A-Za-z0-9._-]+, at most MaxScheduleNameLen bytes; empty means the
	// queue's name. Two schedules with one name share one lease and one
	// series of ticks; give each its own name.
	Name string
	// Spec is a cron spec of five fields (minute, hour, day of month,
	// month, day of week), a descriptor (@hourly, @daily, @weekly,
	// @monthly, @yearly or its alias @annually, @midnight) or
	// "@every <Go duration>". Cron specs and descriptors are read in UTC
	// unless they start with CRON_TZ=<IANA zone> (or its alias
	// TZ=<IANA zone>) and a space; the zone must be named, so "Local"
	// and an empty zone are refused. Parsed by github.com/robfig/cron/v3,
	// whose rules hold for daylight-saving changes too: a time skipped by
	// a forward change never fires that day, and a time repeated by a
	// backward change fires once, at its first occurrence. A cron spec
	// that no date matches (such as "0 0 30 2 *") is refused. "@every d"
	// takes a whole number of seconds, at least one (90s, 1h30m; not
	// 1500ms, 0s or -5s), and no zone; it ticks every d from the tick
	// before, starting d after the schedule first runs. Required.
	Spec string
	// Missed says what happens to ticks missed while no scheduler ran.
	// Empty means MissedRunOnce.
	Missed Missed
}

// MaxScheduleNameLen is the longest Schedule.Name. Each tick's job ID
// is the name and 21 bytes more, and a backend names the
// schedule's lease after it (RabbitMQ: "queuey.lease.schedule.<name>", 22
// bytes more), each within AMQP's 255-byte limit.
const MaxScheduleNameLen = 200

// cronParser reads the specs of Schedule.Spec.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// specForms says which Schedule.Specs are accepted, for messages.
const specForms = "five cron fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @midnight), either optionally after CRON_TZ=<IANA zone> and a space; or @every <whole seconds, at least 1s> such as @every 90s or @every 1h"

// SpecError is the error of a Schedule.Spec that is refused. It wraps
// ErrInvalidOption.
type SpecError struct {
	// Name is the schedule's name, empty when the spec was parsed alone
	// (ParseSpec).
	Name string
	// Spec is the spec refused.
	Spec string
	// Reason says what is wrong with Spec.
	Reason string
}

func (e *SpecError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("%v: schedule spec %q: %s; want %s", ErrInvalidOption, e.Spec, e.Reason, specForms)
	}
	return fmt.Sprintf("%v: schedule %q: spec %q: %s; want %s", ErrInvalidOption, e.Name, e.Spec, e.Reason, specForms)
}

// Unwrap returns ErrInvalidOption.
func (e *SpecError) Unwrap() error { return ErrInvalidOption }

// Prefixes that give a spec its zone.
var zonePrefixes = []string{"CRON_TZ=", "TZ="}

// everyPrefix starts a spec of a constant interval.
const everyPrefix = "@every "

// neverRef is the start of the five years in which a cron spec that any
// date matches has a tick: from 2000 to 2004 every day of every month
// occurs, 29 February included, on each day of the week.
var neverRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseSpec parses a Schedule.Spec and returns its ticks: next(t) is the
// first tick after t, zero when there is none within five years. A refused
// spec is a *SpecError, which says why and what is accepted. Validating a
// Schedule and a QueueConfig calls it; so does the generator, for the
// schedule= key.
func ParseSpec(spec string) (next func(after time.Time) time.Time, err error) {
	refuse := func(format string, args ...any) error {
		return &SpecError{Spec: spec, Reason: fmt.Sprintf(format, args...)}
	}
	rest := spec
	zoned := false
	for _, prefix := range zonePrefixes {
		z, ok := strings.CutPrefix(spec, prefix)
		if !ok {
			continue
		}
		// The library slices the zone up to the first space and panics
		// when there is none, and it reads "Local" and "" as the zone
		// of the time given, which is UTC here.
		zone, after, found := strings.Cut(z, " ")
		after = strings.TrimSpace(after)
		switch {
		case !found || after == "":
			return nil, refuse("%s%s is followed by no schedule", prefix, zone)
		case zone == "" || zone == "Local":
			return nil, refuse("%s%s names no IANA zone, such as Europe/Berlin or UTC", prefix, zone)
		}
		rest, zoned = after, true
		break
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if d, ok := strings.CutPrefix(rest, everyPrefix); ok {
		if zoned {
			// The library ignores the zone of an interval.
			return nil, refuse("a zone has no meaning for @every")
		}
		// The library reads a shorter interval as one second and drops
		// fractions of a second.
		if dur, _ := time.ParseDuration(d); dur < time.Second || dur%time.Second != 0 {
			return nil, refuse("@every takes whole seconds, at least 1s: %s would tick every %v", d, cron.Every(dur).Delay)
		}
	} else if s.Next(neverRef).IsZero() {
		return nil, refuse("no date matches it, so it never ticks")
	}
	// A spec without a zone is read in the zone of the time it is given:
	// always UTC here.
	return func(after time.Time) time.Time { return s.Next(after.UTC()).UTC() }, nil
}

// withDefaults returns s with its name defaulted to queue.
func (s Schedule) withDefaults(queue string) Schedule {
	if s.Name == "" {
		s.Name = queue
	}
	if s.Missed == "" {
		s.Missed = MissedRunOnce
	}
	return s
}

// validate checks s (after withDefaults) and returns its ticks.
func (s Schedule) validate() (func(time.Time) time.Time, error) {
	if !names.Valid(s.Name) || len(s.Name) > MaxScheduleNameLen {
		return nil, fmt.Errorf("%w: schedule name %q, want %s+, at most %d bytes", ErrInvalidOption, s.Name, names.Chars, MaxScheduleNameLen)
	}
	switch s.Missed {
	case MissedRunOnce, MissedSkip:
	default:
		return nil, fmt.Errorf("%w: schedule %q: Missed %q, want %q or %q", ErrInvalidOption, s.Name, s.Missed, MissedRunOnce, MissedSkip)
	}
	next, err := ParseSpec(s.Spec)
	var se *SpecError
	if errors.As(err, &se) {
		se.Name = s.Name
	}
	return next, err
}

// tickID is the job ID of schedule name's tick at t: name, "@", and t in
// UTC as RFC 3339 ("reports.daily@2026-11-30T06:00:00Z"). A tick enqueued
// twice (around a change of scheduler) carries one ID both times, so a
// handler can be idempotent on it.
func tickID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(time.RFC3339)
}

// maxCatchUp bounds the walk over missed ticks to find the latest one;
// beyond it the latest found so far stands in for it.
const maxCatchUp = 1_000_000
