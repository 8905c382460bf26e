package rabbitmq

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"time"
)

// The names of the broker queues that hold a queue's global limits
// (runtime.QueueConfig's Limit, Rate and LimitKey). Every worker and the
// admin API derive them from the limited queue's name alone, so they
// must never change: a worker that named them otherwise would mint a
// second set of tokens.
//
// For a limited queue q (at most runtime.MaxQueueNameLen, 235 bytes, so
// that the longest, "queuey.limit.<q>.ledger", is at most 255):
//
//	queuey.limit.<q>          the Limit's tokens, one message each
//	queuey.limit.<q>.ledger   one message: how many Limit tokens are minted
//	queuey.limit.<q>.lock     exclusive queue: the Limit's mint lock
//	queuey.rate.<q>           the Rate's tokens, one message each
//	queuey.rate.<q>.ledger    one message: how many Rate tokens are minted
//	queuey.rate.<q>.lock      exclusive queue: the Rate's mint lock
//	queuey.rate.<q>.s|.m|.h   the Rate's return queue for a Per of a
//	                          second, a minute or an hour
//	queuey.lease.key.<q>.<k>  the lease of limit key value k (see keyLeaseName)

// Prefixes of the limits' queue names.
const (
	// limitQueuePrefix starts the name of a Limit's token, ledger and lock
	// queues.
	limitQueuePrefix = "queuey.limit."
	// rateQueuePrefix starts the name of a Rate's token, ledger, lock and
	// return queues.
	rateQueuePrefix = "queuey.rate."
	// keyLeasePrefix starts the lease name (after leaseQueuePrefix, the
	// queue name) of a limit key's lease.
	keyLeasePrefix = "key."
)

// Suffixes of a limit's ledger and lock queues, after its token queue's
// name.
const (
	ledgerSuffix = ".ledger"
	lockSuffix   = ".lock"
)

// limitTokenQueue returns the name of queue q's Limit token queue,
// "queuey.limit.<q>": it holds one message per token minted; a token a
// job holds is unacked there, so its consumers are the jobs waiting and
// its unacked count the tokens in use.
func limitTokenQueue(q string) string { return limitQueuePrefix + q }

// limitLedgerQueue returns the name of queue q's Limit ledger queue,
// "queuey.limit.<q>.ledger": it holds one message, whose body is the
// count of Limit tokens minted in decimal (the Limit the broker holds).
func limitLedgerQueue(q string) string { return limitTokenQueue(q) + ledgerSuffix }

// limitLockQueue returns the name of queue q's Limit mint lock,
// "queuey.limit.<q>.lock": an exclusive queue, present while a connection
// mints or retires q's Limit tokens.
func limitLockQueue(q string) string { return limitTokenQueue(q) + lockSuffix }

// rateTokenQueue returns the name of queue q's Rate token queue,
// "queuey.rate.<q>": its ready messages are the starts the rate allows
// now; its consumers are the jobs waiting for one.
func rateTokenQueue(q string) string { return rateQueuePrefix + q }

// rateLedgerQueue returns the name of queue q's Rate ledger queue,
// "queuey.rate.<q>.ledger": it holds one message, whose body is the count
// of Rate tokens minted in decimal (the Rate's N the broker holds).
func rateLedgerQueue(q string) string { return rateTokenQueue(q) + ledgerSuffix }

// rateLockQueue returns the name of queue q's Rate mint lock,
// "queuey.rate.<q>.lock": an exclusive queue, present while a connection
// mints or retires q's Rate tokens.
func rateLockQueue(q string) string { return rateTokenQueue(q) + lockSuffix }

// rateReturnQueue returns the name of the queue where queue q's Rate
// tokens spent under a period of per wait out the period,
// "queuey.rate.<q>.s", ".m" or ".h" for a second, a minute or an hour
// (the periods a valid runtime.Rate takes; any other per gets its
// milliseconds and "ms"). Its x-message-ttl is per, and it dead-letters into
// rateTokenQueue(q). A changed period gets a queue of its own: the old one
// drains on its own.
func rateReturnQueue(q string, per time.Duration) string {
	return rateTokenQueue(q) + "." + rateUnit(per)
}

// rateUnit names a rate's period as rateReturnQueue does.
func rateUnit(per time.Duration) string {
	switch per {
	case time.Second:
		return "s"
	case time.Minute:
		return "m"
	case time.Hour:
		return "h"
	}
	return strconv.FormatInt(per.Milliseconds(), 10) + "ms"
}

// plainKey matches the limit key values that name their lease as they
// are.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// keyLeaseName returns the lease name (runtime.Leaser's, see lease.go) of
// the limit key value key of queue q: "key.<q>.<k>", with k the value as
// it is when it is 1 to 64 (runtime.LimitKeyMaxLen) of [A-Za-z0-9_-], and
// otherwise "x." and the first 32 hex digits of the value's SHA-256 (so
// that no two values that fit the first form share a lease, and the rest
// collide only as SHA-256 prefixes of 128 bits do). Its queue is
// keyLeaseQueue(q, key).
func keyLeaseName(q, key string) string {
	k := key
	if !plainKey.MatchString(key) {
		sum := sha256.Sum256([]byte(key))
		k = "x." + hex.EncodeToString(sum[:16])
	}
	return keyLeasePrefix + q + "." + k
}

// keyLeaseQueue returns the name of the lease queue of the limit key
// value key of queue q: "queuey.lease.key.<q>.<k>" (see keyLeaseName), at
// most 255 bytes for a q of at most runtime.MaxKeyedQueueNameLen.
func keyLeaseQueue(q, key string) string { return leaseQueue(keyLeaseName(q, key)) }

// keyLeaseQueuePrefix returns what the name of every limit key lease
// queue of queue q starts with, "queuey.lease.key.<q>.": the admin API
// lists them by it. Another queue's name may start with "<q>." too, so a
// reader keeps only the names whose rest, after this prefix, is a k that
// keyLeaseName makes: 1 to 64 of [A-Za-z0-9_-], or "x." and 32 lower-case
// hex digits (which queue "<q>.x"'s key of 32 hex digits makes as well).
func keyLeaseQueuePrefix(q string) string { return leaseQueue(keyLeasePrefix + q + ".") }
