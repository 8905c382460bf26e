// Package names holds the one rule for the names queuey gives the broker:
// queue names, schedule names, queue-name suffixes and exchange names.
// runtime, annotations and the RabbitMQ backend all check names here, so
// that what one of them accepts the others accept too.
package names

import (
	"fmt"
	"strings"
)

// Chars is the character class of a name, for messages.
const Chars = "[A-Za-z0-9._-]"

// MaxShortString is the longest AMQP short string, in bytes: the limit of
// every queue and exchange name the broker takes.
const MaxShortString = 255

// LongestDerived is how many bytes the longest name the RabbitMQ backend
// derives from a queue name adds to it with its default options: the
// deferral hold queue of the longest wait, "<q>.deferred.2147483647"
// (runtime.MaxDeferral in milliseconds). Every other derived name adds
// less: "<q>.retry.<ttl_ms>", "<q>.dead", the delay exchange "<q>.delay",
// the paused marker "queuey.paused.<q>".
const LongestDerived = len(".deferred.") + len("2147483647")

// MaxQueue is the longest queue name: one whose every derived name still
// fits in a short string.
const MaxQueue = MaxShortString - LongestDerived

// QueueRule says what a queue name is, for messages.
var QueueRule = fmt.Sprintf("a queue name of %s+, at most %d bytes (%d, AMQP's limit, less %d for the names derived from it, such as <name>.deferred.<ttl_ms>)",
	Chars, MaxQueue, MaxShortString, LongestDerived)

// Valid reports whether s is one or more characters of Chars. It does not
// bound the length: each kind of name has its own limit.
func Valid(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Queue reports whether s is a valid queue name: Valid, at most MaxQueue
// bytes, and not starting with ReservedPrefix or LadderPrefix.
func Queue(s string) bool {
	return len(s) <= MaxQueue && Valid(s) && Reserved(s) == ""
}

// LadderPrefix starts the names of the queues and exchanges of the RabbitMQ
// backend's delay ladders (delay=ladder), which every queue of a type
// shares: "queuey.ladder.<type>.<granularity>ms.<level>" and the like. A
// queue of the application so named could take or drop the ladder's waits.
const LadderPrefix = "queuey.ladder."

// Reserved returns why s may not name a queue, for messages, when it starts
// with a reserved prefix (ReservedPrefix, LadderPrefix); "" when it does
// not.
func Reserved(s string) string {
	switch {
	case strings.HasPrefix(s, ReservedPrefix):
		return "it starts with " + ReservedPrefix + ", the prefix the broker keeps for its own queues and refuses to declare"
	case strings.HasPrefix(s, LadderPrefix):
		return "it starts with " + LadderPrefix + ", the prefix of the delay ladders' queues and exchanges, which every queue shares"
	}
	return ""
}

// LadderKeyLen is the length, in bytes, of the routing key of a wait on a
// delay ladder of levels levels for queue name, and of the binding of name
// to the ladder: one word of "0" or "1" per level, each followed by a dot,
// then name.
func LadderKeyLen(name string, levels int) int { return 2*levels + len(name) }

// MaxLadderQueue returns the longest name of a queue whose waits go on a
// delay ladder of levels levels: a routing key, like any short string, is
// at most MaxShortString bytes (LadderKeyLen). At the default granularity
// (1s, 22 levels) it is 211 bytes, at 1ms (31 levels) 193.
func MaxLadderQueue(levels int) int { return MaxShortString - 2*levels }

// ReservedPrefix starts the names the broker keeps for its own queues and
// exchanges: it refuses to declare a queue so named (403 ACCESS_REFUSED,
// "contains reserved prefix 'amq.*'", seen on 3.10.8).
const ReservedPrefix = "amq."

// ReservedRule says why a name that starts with ReservedPrefix is refused,
// for messages.
const ReservedRule = "a name that does not start with " + ReservedPrefix + ", which the broker reserves for its own and refuses to declare"

// LadderRule says why a name that starts with LadderPrefix is refused, for
// messages.
const LadderRule = "a name that does not start with " + LadderPrefix + ", which names the delay ladders' queues and exchanges"

// QueueRuleFor says what a queue name is, for a message about s: the
// reserved prefix when s starts with one, QueueRule otherwise.
func QueueRuleFor(s string) string {
	switch {
	case strings.HasPrefix(s, ReservedPrefix):
		return ReservedRule
	case strings.HasPrefix(s, LadderPrefix):
		return LadderRule
	}
	return QueueRule
}
