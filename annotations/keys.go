package annotations

import (
	"cmp"
	"errors"
	"fmt"
	"go/token"
	"strconv"
	"strings"
	"time"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// Keys of the //queuey:queue directive, in the order messages list them.
const (
	KeyName        = "name"
	KeyPrefetch    = "prefetch"
	KeyConcurrency = "concurrency"
	KeyMaxPriority = "max_priority"
	KeyMaxAttempts = "max_attempts"
	KeyRetryBase   = "retry_base"
	KeyRetryMax    = "retry_max"
	KeyTimeout     = "timeout"
	KeyQueueType   = "queue_type"
	KeyDelay       = "delay"
	KeySchedule    = "schedule"
	KeyMissed      = "missed"
	KeyLimit       = "limit"
	KeyRate        = "rate"
	KeyLimitKey    = "limit_key"
)

// Keys lists every key the directive accepts.
var Keys = []string{
	KeyName, KeyPrefetch, KeyConcurrency, KeyMaxPriority, KeyMaxAttempts,
	KeyRetryBase, KeyRetryMax, KeyTimeout, KeyQueueType, KeyDelay,
	KeySchedule, KeyMissed, KeyLimit, KeyRate, KeyLimitKey,
}

// acceptedName says what a queue name is: runtime's rule, which
// QueueConfig.Validate applies too.
var acceptedName = names.QueueRule

// A keySpec reads one key's value into a config.
type keySpec struct {
	// accepted describes the values accepted, for messages.
	accepted string
	// apply sets the value on q and reports whether it was acceptable.
	apply func(q *runtime.QueueConfig, v string) bool
	// enum lists the accepted words of an enumerated key, for suggestions.
	enum []string
	// why, when set, says why a value apply refused is wrong, for
	// messages; accepted alone says it for keys without it.
	why func(v string) string
}

// longestRetry is the longest retry_base and retry_max: a retry delay is
// rounded up to the granularity, and must then be within MaxDeferral.
var longestRetry = waits.Longest(runtime.DefaultGranularity)

var keySpecs = map[string]keySpec{
	KeyName: {
		accepted: acceptedName,
		apply: func(q *runtime.QueueConfig, v string) bool {
			q.Name = v
			return names.Queue(v)
		},
		why: names.Reserved,
	},
	KeyPrefetch: intKey(1, runtime.PrefetchLimit, "", func(q *runtime.QueueConfig, n int) { q.Prefetch = n }),
	KeyConcurrency: {
		accepted: "an integer in 1..prefetch",
		apply: func(q *runtime.QueueConfig, v string) bool {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > runtime.PrefetchLimit {
				return false
			}
			q.Concurrency = n
			return true
		},
	},
	// max_priority=0 declares no priority, which a QueueConfig says with
	// runtime.NoPriority: its zero is the default.
	KeyMaxPriority: intKey(0, runtime.MaxPriorityLimit, " (0 declares no priority)", func(q *runtime.QueueConfig, n int) {
		q.MaxPriority = cmp.Or(n, runtime.NoPriority)
	}),
	KeyMaxAttempts: intKey(1, runtime.MaxAttemptsLimit, "", func(q *runtime.QueueConfig, n int) { q.MaxAttempts = n }),
	KeyRetryBase: durationKey(longestRetry, "a Go duration above 0 and at most "+longestRetry.String()+" (runtime.MaxDeferral in whole seconds), such as 500ms, 1s or 1m30s",
		func(q *runtime.QueueConfig, d time.Duration) { q.RetryBase = d }),
	KeyRetryMax: durationKey(longestRetry, "a Go duration above 0 and at most "+longestRetry.String()+" (runtime.MaxDeferral in whole seconds), such as 30s, 10m or 1h",
		func(q *runtime.QueueConfig, d time.Duration) { q.RetryMax = d }),
	KeyTimeout: durationKey(0, "a Go duration above 0, such as 30s or 5m",
		func(q *runtime.QueueConfig, d time.Duration) { q.Timeout = d }),
	KeyQueueType: enumKey([]string{string(runtime.QueueClassic), string(runtime.QueueQuorum)},
		func(q *runtime.QueueConfig, v string) { q.QueueType = runtime.QueueType(v) }),
	KeyDelay: enumKey([]string{string(runtime.DelayQueue), string(runtime.DelayPlugin), string(runtime.DelayLadder)},
		func(q *runtime.QueueConfig, v string) { q.Delay = runtime.DelayMode(v) }),
	KeySchedule: {
		accepted: `a cron spec of five fields in double quotes ("0 6 * * *", "CRON_TZ=Europe/Berlin 0 6 * * 1-5"), a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @midnight) or "@every <whole seconds, at least 1s>" ("@every 90s")`,
		apply: func(q *runtime.QueueConfig, v string) bool {
			q.Schedule = v
			_, err := runtime.ParseSpec(v)
			return err == nil
		},
		// runtime.ParseSpec holds the rule; its reason goes into the
		// message.
		why: func(v string) string {
			var se *runtime.SpecError
			if _, err := runtime.ParseSpec(v); errors.As(err, &se) {
				return se.Reason
			}
			return ""
		},
	},
	KeyMissed: enumKey([]string{string(runtime.MissedRunOnce), string(runtime.MissedSkip)},
		func(q *runtime.QueueConfig, v string) { q.Missed = runtime.Missed(v) }),
	// A zero Limit or Rate is none, which leaving the key out says: a
	// written 0 is more likely a mistake than a wish for no limit.
	KeyLimit: {
		accepted: fmt.Sprintf("an integer in 1..%d (leave limit= out for no limit)", runtime.LimitMax),
		apply: func(q *runtime.QueueConfig, v string) bool {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > runtime.LimitMax {
				return false
			}
			q.Limit = n
			return true
		},
		why: func(v string) string {
			if n, err := strconv.Atoi(v); err == nil && n == 0 {
				return "a limit of 0 would run no job"
			}
			return ""
		},
	},
	// runtime.ParseRate holds the rule, which QueueConfig.Validate
	// applies too.
	KeyRate: {
		accepted: fmt.Sprintf("a count per second, minute or hour: N/s, N/m or N/h with N in 1..%d, such as 50/s or 1000/h (leave rate= out for no rate limit)", runtime.LimitMax),
		apply: func(q *runtime.QueueConfig, v string) bool {
			r, err := runtime.ParseRate(v)
			if err != nil {
				return false
			}
			q.Rate = r
			return true
		},
		why: rateWhy,
	},
	KeyLimitKey: {
		accepted: "the name of an exported field of the job, of a string, integer or bool type",
		apply: func(q *runtime.QueueConfig, v string) bool {
			q.LimitKey = v
			return token.IsIdentifier(v) && token.IsExported(v)
		},
		why: func(v string) string {
			if token.IsIdentifier(v) {
				return v + " is not exported, and msgpack carries only exported fields: the worker reads the key from the job as it arrives"
			}
			return v + " is not a Go identifier"
		},
	},
}

// rateWhy says what is wrong with a rate that runtime.ParseRate refused,
// for the parts a reader is likely to get wrong; "" for the rest, which
// accepted covers.
func rateWhy(v string) string {
	num, unit, ok := strings.Cut(v, "/")
	if !ok {
		return "a rate is a count and a period, with / between"
	}
	if n, err := strconv.Atoi(num); err == nil && n == 0 {
		return "a rate of 0 would start no job"
	}
	if _, err := runtime.ParseRate(num + "/s"); err == nil {
		return fmt.Sprintf("the period %q is not s, m or h", unit)
	}
	return ""
}

func intKey(lo, hi int, note string, set func(*runtime.QueueConfig, int)) keySpec {
	return keySpec{
		accepted: fmt.Sprintf("an integer in %d..%d%s", lo, hi, note),
		apply: func(q *runtime.QueueConfig, v string) bool {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return false
			}
			set(q, n)
			return true
		},
	}
}

// durationKey accepts a Go duration above 0 and, when hi > 0, at most hi.
func durationKey(hi time.Duration, accepted string, set func(*runtime.QueueConfig, time.Duration)) keySpec {
	return keySpec{
		accepted: accepted,
		apply: func(q *runtime.QueueConfig, v string) bool {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 || (hi > 0 && d > hi) {
				return false
			}
			set(q, d)
			return true
		},
	}
}

// orList joins words for a message: "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 3 {
		return strings.Join(words, " or ")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func enumKey(words []string, set func(*runtime.QueueConfig, string)) keySpec {
	return keySpec{
		accepted: orList(words),
		enum:     words,
		apply: func(q *runtime.QueueConfig, v string) bool {
			for _, w := range words {
				if v == w {
					set(q, v)
					return true
				}
			}
			return false
		},
	}
}
