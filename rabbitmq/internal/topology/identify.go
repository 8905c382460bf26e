package topology

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// HoldInfo is what a hold queue holds: waits of Kind for Delay, which
// return to logical queue Queue.
type HoldInfo struct {
	Queue string
	Kind  admin.HoldKind
	Delay time.Duration
}

// NamedLikeHold returns the logical queue, kind and delay that name would
// be the hold queue of, by its name alone: "<queue><suffix>.<ttl_ms>". A
// name says nothing for sure: a work queue may be called so too (see
// IdentifyHold).
func (n Names) NamedLikeHold(name string) (HoldInfo, bool) {
	n = n.WithDefaults()
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return HoldInfo{}, false
	}
	ttl, err := strconv.ParseInt(name[dot+1:], 10, 64)
	if err != nil || ttl <= 0 || strconv.FormatInt(ttl, 10) != name[dot+1:] {
		return HoldInfo{}, false
	}
	for _, s := range []struct {
		suffix string
		kind   admin.HoldKind
	}{{n.RetrySuffix, admin.HoldRetry}, {n.DeferredSuffix, admin.HoldDeferred}} {
		if q, ok := strings.CutSuffix(name[:dot], s.suffix); ok && q != "" {
			return HoldInfo{Queue: q, Kind: s.kind, Delay: time.Duration(ttl) * time.Millisecond}, true
		}
	}
	return HoldInfo{}, false
}

// IdentifyHold reports whether the broker queue name, of type typ
// ("classic" or "quorum") and declared with args (as the management API
// lists them, numbers as float64), is a hold queue as Hold or QuorumHold
// declare one, and what it holds. The arguments decide, not the name
// alone: the queue dead-letters to the default exchange with the routing
// key of the logical queue it returns waits to, has the TTL its name
// carries, and has every other argument its type's hold queues are
// declared with (a classic one its x-expires, HoldExpires; a quorum one
// at-least-once dead-lettering). Other arguments are ignored. A work queue
// that happens to be called "q.retry.1000" dead-letters to its own
// dead-letter queue, so it is never taken for one.
//
// When it is not a hold queue but is named like one, why says what its
// arguments show instead.
func (n Names) IdentifyHold(name, typ string, args map[string]any) (h HoldInfo, ok bool, why string) {
	h, named := n.NamedLikeHold(name)
	if !named {
		return HoldInfo{}, false, ""
	}
	ttl := h.Delay.Milliseconds()
	var want amqp.Table
	switch typ {
	case string(runtime.QueueClassic), "":
		want = classicHoldArgs(h.Queue, ttl)
	case string(runtime.QueueQuorum):
		want = quorumHoldArgs(h.Queue, ttl)
	default:
		return HoldInfo{}, false, fmt.Sprintf("a %s queue; hold queues are classic or quorum", typ)
	}
	for _, k := range argOrder {
		v, wanted := want[k]
		if !wanted {
			continue
		}
		got, present := args[k]
		if !present || !sameArg(v, got) {
			if !present {
				return HoldInfo{}, false, fmt.Sprintf("it has no %s; a hold queue of %q has %v", k, h.Queue, v)
			}
			return HoldInfo{}, false, fmt.Sprintf("its %s is %v; a hold queue of %q has %v", k, got, h.Queue, v)
		}
	}
	if _, present := args[ArgExpires]; present && typ == string(runtime.QueueQuorum) {
		return HoldInfo{}, false, fmt.Sprintf("it has an %s; a quorum hold queue has none", ArgExpires)
	}
	return h, true, ""
}

// argOrder is the order in which IdentifyHold compares arguments: what
// makes a hold queue first, so that why names the first that differs.
var argOrder = []string{ArgDeadLetterRoutingKey, ArgDeadLetterExchange, ArgMessageTTL, ArgQueueType, ArgExpires, ArgDeadLetterStrategy, ArgOverflow}

// sameArg reports whether an argument as declared (want) and as the
// management API lists it (got) are equal: numbers by value, whatever
// their type, everything else as it is.
func sameArg(want, got any) bool {
	w, wNum := number(want)
	g, gNum := number(got)
	if wNum || gNum {
		return wNum && gNum && w == g
	}
	return want == got
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
