package rabbitmq

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The names of the broker queues that hold a queue's global limits
// (runtime.QueueConfig's Limit, Rate and LimitKey). Every worker and the
// admin API derive them from the limited queue's name alone, so they
// must never change: a worker that named them otherwise would mint a
// second set of tokens.
//
// For a limited queue q (at most runtime.MaxQueueNameLen, 235 bytes, so
// that the longest, "queuey.limit-ledger.<q>", is at most 255):
//
//	queuey.limit.<q>          the Limit's tokens, one message each
//	queuey.limit-ledger.<q>   one message: how many Limit tokens are minted
//	queuey.limit-lock.<q>     exclusive queue: the Limit's mint lock
//	queuey.rate.<q>           the Rate's tokens, one message each
//	queuey.rate-ledger.<q>    one message: how many Rate tokens are minted
//	queuey.rate-lock.<q>      exclusive queue: the Rate's mint lock
//	queuey.rate-s|-m|-h.<q>   the Rate's return queue for a Per of a
//	                          second, a minute or an hour
//	queuey.lease.key.<n>.<q>.<k>  the lease of limit key value k, n being
//	                          q's length in bytes (see keyLeaseName)
//
// What a name holds is said before the queue's name, never after it:
// queue q's name is the whole rest of the name, so that no two queues'
// limits share a broker queue ("queuey.limit.a.lock" is queue "a.lock"'s
// tokens, never queue "a"'s lock).

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

// Roles of a limit's ledger and lock queues, between "queuey.limit" or
// "queuey.rate" and the queue's name.
const (
	ledgerRole = "-ledger."
	lockRole   = "-lock."
)

// limitTokenQueue returns the name of queue q's Limit token queue,
// "queuey.limit.<q>": it holds one message per token minted; a token a
// job holds is unacked there, so its consumers are the jobs waiting and
// its unacked count the tokens in use.
func limitTokenQueue(q string) string { return limitQueuePrefix + q }

// limitLedgerQueue returns the name of queue q's Limit ledger queue,
// "queuey.limit-ledger.<q>": it holds one message, whose body is the
// count of Limit tokens minted in decimal (the Limit the broker holds).
func limitLedgerQueue(q string) string { return "queuey.limit" + ledgerRole + q }

// limitLockQueue returns the name of queue q's Limit mint lock,
// "queuey.limit-lock.<q>": an exclusive queue, present while a connection
// mints or retires q's Limit tokens.
func limitLockQueue(q string) string { return "queuey.limit" + lockRole + q }

// rateTokenQueue returns the name of queue q's Rate token queue,
// "queuey.rate.<q>": its ready messages are the starts the rate allows
// now; its consumers are the jobs waiting for one.
func rateTokenQueue(q string) string { return rateQueuePrefix + q }

// rateLedgerQueue returns the name of queue q's Rate ledger queue,
// "queuey.rate-ledger.<q>": it holds one message, whose body is the count
// of Rate tokens minted in decimal (the Rate's N the broker holds).
func rateLedgerQueue(q string) string { return "queuey.rate" + ledgerRole + q }

// rateLockQueue returns the name of queue q's Rate mint lock,
// "queuey.rate-lock.<q>": an exclusive queue, present while a connection
// mints or retires q's Rate tokens.
func rateLockQueue(q string) string { return "queuey.rate" + lockRole + q }

// rateReturnQueue returns the name of the queue where queue q's Rate
// tokens spent under a period of per wait out the period,
// "queuey.rate-s.<q>", "-m" or "-h" for a second, a minute or an hour
// (the periods a valid runtime.Rate takes; any other per gets its
// milliseconds and "ms"). Its x-message-ttl is per, and it dead-letters into
// rateTokenQueue(q). A changed period gets a queue of its own: the old one
// drains on its own.
func rateReturnQueue(q string, per time.Duration) string {
	return "queuey.rate-" + rateUnit(per) + "." + q
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
// are: 1 to runtime.LimitKeyMaxLen (60) of [A-Za-z0-9_-], no dot.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]{1,60}$`)

// keyLeaseName returns the lease name (runtime.Leaser's, see lease.go) of
// the limit key value key of queue q: "key.<n>.<q>.<k>", n being q's
// length in bytes, so that the name says where q ends whatever dots q
// holds. k is the value as it is when plainKey matches it, and otherwise
// "x." and the first 32 hex digits of the value's SHA-256: the dot keeps
// the two forms apart, and hashed values collide only as SHA-256
// prefixes of 128 bits do. Its queue is keyLeaseQueue(q, key).
func keyLeaseName(q, key string) string {
	k := key
	if !plainKey.MatchString(key) {
		sum := sha256.Sum256([]byte(key))
		k = "x." + hex.EncodeToString(sum[:16])
	}
	return keyLeasePrefix + strconv.Itoa(len(q)) + "." + q + "." + k
}

// keyLeaseQueue returns the name of the lease queue of the limit key
// value key of queue q: "queuey.lease.key.<n>.<q>.<k>" (see
// keyLeaseName), at most 255 bytes for a q of at most
// runtime.MaxKeyedQueueNameLen.
func keyLeaseQueue(q, key string) string { return leaseQueue(keyLeaseName(q, key)) }

// keyLeaseQueuePrefix returns what the name of every limit key lease
// queue of queue q starts with, "queuey.lease.key.<n>.<q>.": the admin
// API lists them by it.
func keyLeaseQueuePrefix(q string) string {
	return leaseQueue(keyLeasePrefix + strconv.Itoa(len(q)) + "." + q + ".")
}

// keyQueueName returns the queue q whose limit key lease queue is name,
// and whether name is one: "queuey.lease.key.<n>.<q>.<k>" with n q's
// length and k as keyLeaseName makes it.
func keyQueueName(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, leaseQueuePrefix+keyLeasePrefix)
	if !ok {
		return "", false
	}
	num, rest, ok := strings.Cut(rest, ".")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 || num != strconv.Itoa(n) || len(rest) < n+2 || rest[n] != '.' {
		return "", false
	}
	q, k := rest[:n], rest[n+1:]
	if !plainKey.MatchString(k) && !hashedKey.MatchString(k) {
		return "", false
	}
	return q, true
}

// hashedKey is the k of a key lease name (keyLeaseName) of a value that
// is not used as it is.
var hashedKey = regexp.MustCompile(`^x\.[0-9a-f]{32}$`)
