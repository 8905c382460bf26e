package runtime

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuey/queuey/internal/names"
)

// Missed says what a schedule does with ticks that passed while no
// scheduler ran (every worker was down, or the lease was changing hands).
// A missed tick is never fired more than once, and several missed ticks
// are never fired in a burst.
type Missed string

const (
	// MissedRunOnce fires the latest missed tick once, as soon as a
	// scheduler runs again, then goes on with the schedule. It is the
	// default.
	MissedRunOnce Missed = "once"
	// MissedSkip fires no missed tick: the schedule goes on with the next
	// tick after the moment a scheduler runs again.
	MissedSkip Missed = "skip"
)

// Schedule makes a worker enqueue a job on its own at each tick of Spec.
type Schedule struct {
	// Name identifies the schedule across every process of a backend: one
	// lease is held per name, and each tick's job ID is Name and the
	// tick's time (see TickID). [A-Za-z0-9._-]+, at most
	// MaxScheduleNameLen bytes; empty means the queue's name. Two schedules with one name share one lease and one series of
	// ticks; give each its own name.
	Name string
	// Spec is a cron spec of five fields (minute, hour, day of month,
	// month, day of week), a descriptor (@hourly, @daily, @weekly,
	// @monthly, @yearly, @midnight) or "@every <Go duration>". Cron specs
	// are read in UTC unless they start with CRON_TZ=<IANA zone>. Parsed
	// by github.com/robfig/cron/v3, whose rules hold for daylight-saving
	// changes too: a time skipped by a forward change never fires that
	// day, and a time repeated by a backward change fires once, at its
	// first occurrence. "@every d" ticks every d (rounded down to whole
	// seconds, at least one second) from the tick before, starting d after
	// the schedule first runs. Required.
	Spec string
	// Missed says what happens to ticks missed while no scheduler ran.
	// Empty means MissedRunOnce.
	Missed Missed
}

// MaxScheduleNameLen is the longest Schedule.Name. Each tick's job ID
// (TickID) is the name and 21 bytes more, and a backend names the
// schedule's lease after it (RabbitMQ: "queuey.lease.schedule.<name>", 22
// bytes more), each within AMQP's 255-byte limit.
const MaxScheduleNameLen = 200

// cronParser reads the specs of Schedule.Spec.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSpec parses a Schedule.Spec and returns its ticks: next(t) is the
// first tick after t, zero when there is none within five years. Errors
// say what is accepted.
func ParseSpec(spec string) (next func(after time.Time) time.Time, err error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: schedule %q: %v; want five cron fields (minute hour day-of-month month day-of-week), a descriptor such as @hourly or @daily, or @every <duration> such as @every 1h, optionally after CRON_TZ=<zone>", ErrInvalidOption, spec, err)
	}
	// A spec without CRON_TZ is read in the zone of the time it is given:
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
	return ParseSpec(s.Spec)
}

// TickID is the job ID of schedule name's tick at t: name, "@", and t in
// UTC as RFC 3339 ("reports.daily@2026-11-30T06:00:00Z"). A tick enqueued
// twice (around a change of scheduler) carries one ID both times, so a
// handler can be idempotent on it.
func TickID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(time.RFC3339)
}

// maxCatchUp bounds the walk over missed ticks to find the latest one;
// beyond it the latest found so far stands in for it.
const maxCatchUp = 1_000_000
