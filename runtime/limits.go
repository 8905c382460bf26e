package runtime

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Global limits: how many of a queue's jobs run at once (QueueConfig.Limit),
// how many start per period (QueueConfig.Rate) and one at a time per value
// of a job field (QueueConfig.LimitKey), each across every worker of a
// backend: every process on one RabbitMQ vhost, or one MemoryBackend.

// Largest values of the limit fields.
const (
	// LimitMax is the largest QueueConfig.Limit and Rate.N: each is a
	// count of tokens the broker holds as messages.
	LimitMax = 10000
	// LimitKeyMaxLen is the longest limit key value, in bytes, that
	// RabbitMQ names a key's lease queue by as it is; a longer one, an
	// empty one, or one with other characters than [A-Za-z0-9_-] is
	// hashed.
	LimitKeyMaxLen = 60
)

// Rate is a rate limit: at most N of a queue's jobs start in any period
// of length Per, across every worker. The zero Rate is none.
type Rate struct {
	// N is how many starts a period allows, 1..LimitMax.
	N int
	// Per is the period: time.Second, time.Minute or time.Hour.
	Per time.Duration
}

// IsZero reports whether r is no rate limit.
func (r Rate) IsZero() bool { return r == Rate{} }

// String writes r as the annotation does: "50/s", "100/m", "1000/h"; the
// zero Rate is "".
func (r Rate) String() string {
	if r.IsZero() {
		return ""
	}
	for _, u := range rateUnits {
		if r.Per == u.per {
			return strconv.Itoa(r.N) + "/" + u.name
		}
	}
	return fmt.Sprintf("%d/%v", r.N, r.Per)
}

// rateUnits are the periods a Rate takes, with their annotation names.
var rateUnits = []struct {
	name string
	per  time.Duration
}{{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}

// rateForms says what ParseRate and Validate accept.
const rateForms = "N/s, N/m or N/h with N in 1..10000 (such as 50/s)"

// ParseRate parses a rate as the annotation writes it: N/s, N/m or N/h,
// N in 1..LimitMax.
func ParseRate(s string) (Rate, error) {
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want %s", s, rateForms)
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > LimitMax || num != strconv.Itoa(n) {
		return Rate{}, fmt.Errorf("rate %q: count %q: want %s", s, num, rateForms)
	}
	for _, u := range rateUnits {
		if unit == u.name {
			return Rate{N: n, Per: u.per}, nil
		}
	}
	return Rate{}, fmt.Errorf("rate %q: period %q: want %s", s, unit, rateForms)
}

// validRate reports whether r is the zero Rate or one ParseRate returns.
func validRate(r Rate) bool {
	if r.IsZero() {
		return true
	}
	if r.N < 1 || r.N > LimitMax {
		return false
	}
	for _, u := range rateUnits {
		if r.Per == u.per {
			return true
		}
	}
	return false
}

// Limited reports whether q has a global limit: a Limit, a Rate or a
// LimitKey.
func (q QueueConfig) Limited() bool {
	return q.Limit > 0 || !q.Rate.IsZero() || q.LimitKey != ""
}

// Limiter is for backend implementers: an optional capability beside
// Backend, of backends that hold global limits across every worker using
// them. A worker asks it for a permit before each run of a job of a queue
// with a Limit, a Rate or a LimitKey, outside the run's timeout, and
// releases the permit when the run ends. Waiting for a permit is not a
// run: it counts no attempt, and the job keeps its place (its delivery,
// and so its priority) meanwhile. Both backends of this module implement
// it; a worker refuses to run a limited queue on a backend that does not.
type Limiter interface {
	// AcquirePermit blocks until a job of q whose limit key is key (""
	// when q has no LimitKey) may start under q's Limit, Rate and
	// LimitKey, and returns the permit that holds its place; or returns
	// ctx's error when ctx ends first, or the backend's failure. A Rate's
	// share is spent as the permit is granted, or, by a PermitStarter, as
	// the run begins, and comes back on its own after Rate.Per; the rest
	// is held until Release. q is resolved (WithDefaults) and valid.
	AcquirePermit(ctx context.Context, q QueueConfig, key string) (Permit, error)
}

// PermitStarter is for backend implementers: an optional capability of a
// Permit that holds a Rate's start unspent until its run begins. A worker
// calls Started as it calls the handler, so that the start is spent after
// the run began and comes back no sooner than Rate.Per after it; a Permit
// released without Started (its run never began) gives the start back.
type PermitStarter interface {
	Started()
}

// Permit is for backend implementers: what Limiter.AcquirePermit grants.
type Permit interface {
	// Release gives back the places the permit holds (a Limit's token, a
	// LimitKey's lease). It is safe to call twice. A permit whose backend
	// lost its connection meanwhile has already given them back.
	Release()
}

// LimitState is the state of one queue's global limits, as a backend's
// admin API reads it.
type LimitState struct {
	// Queue is the limited queue.
	Queue string
	// Limit is the limit the backend holds (the tokens minted), 0 for none.
	Limit int
	// InUse is how many of Limit's tokens are held by running jobs.
	InUse int
	// Waiting is how many jobs wait for one of Limit's tokens.
	Waiting int
	// Rate is the rate limit the backend holds, zero for none.
	Rate Rate
	// RateReady is how many starts the rate allows now; RateWaiting is how
	// many jobs wait for one.
	RateReady, RateWaiting int
	// KeysHeld is how many limit keys have a running job; KeysWaiting is
	// how many jobs wait for their key.
	KeysHeld, KeysWaiting int
}
