package annotations

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"strings"

	"github.com/queuey/queuey/internal/rules/names"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/runtime"
)

// setting is one key=value of a directive.
type setting struct {
	key, value     string
	keyPos, valPos token.Pos
}

// settings splits the keys of directive c, reporting tokens that are not
// key=value.
func (p *parser) settings(c *ast.Comment) ([]setting, bool) {
	ok := true
	var out []setting
	text := c.Text
	i := len(Directive)
	for i < len(text) {
		if text[i] == ' ' || text[i] == '\t' {
			i++
			continue
		}
		start := i
		for i < len(text) && text[i] != ' ' && text[i] != '\t' && text[i] != '=' {
			i++
		}
		quoted := false
		if i < len(text) && text[i] == '=' {
			i++
			if i < len(text) && text[i] == '"' {
				// A quoted value, which may hold spaces: Go's
				// double-quoted string syntax.
				q, err := strconv.QuotedPrefix(text[i:])
				if err != nil {
					p.errorf(c.Slash+token.Pos(i), "", "unterminated or malformed quoted value %s; want a Go double-quoted string such as \"0 6 * * *\"", text[i:])
					return out, false
				}
				i += len(q)
				quoted = true
			} else {
				for i < len(text) && text[i] != ' ' && text[i] != '\t' {
					i++
				}
			}
		}
		tok := text[start:i]
		pos := c.Slash + token.Pos(start)
		key, value, _ := strings.Cut(tok, "=")
		if quoted {
			value, _ = strconv.Unquote(value)
			if value == "" {
				value = `""` // an empty quoted value is a value, and a bad one
			}
		}
		switch {
		case key == "":
			p.errorf(pos, "", "%q has no key; want key=value with a key of %s", tok, strings.Join(Keys, ", "))
			ok = false
		case value == "":
			if _, known := keySpecs[key]; !known {
				p.unknownKey(pos, key)
			} else {
				p.errorf(pos, key, "key %s has no value; want %s=<%s>", key, key, keySpecs[key].accepted)
			}
			ok = false
		default:
			out = append(out, setting{key: key, value: value, keyPos: pos, valPos: pos + token.Pos(len(key)+1)})
		}
	}
	return out, ok
}

func (p *parser) unknownKey(pos token.Pos, key string) {
	msg := fmt.Sprintf("unknown key %s", key)
	if s := suggest(key, Keys); s != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", s)
	}
	p.errorf(pos, key, "%s; want one of %s", msg, strings.Join(Keys, ", "))
}

// resolve turns directive c on type typeName into a config, reporting every
// problem with it, and the positions of the values of its name= and
// limit_key= keys.
func (p *parser) resolve(typeName string, c *ast.Comment) (q runtime.QueueConfig, pos positions, ok bool) {
	before := len(p.errs)
	settings, _ := p.settings(c)

	q = runtime.QueueConfig{Name: p.pkg + "." + SnakeCase(typeName), Kind: p.pkg + "." + typeName}
	given := map[string]setting{}
	bad := map[string]bool{}
	for _, s := range settings {
		spec, known := keySpecs[s.key]
		if !known {
			p.unknownKey(s.keyPos, s.key)
			continue
		}
		if first, dup := given[s.key]; dup {
			p.errorf(s.keyPos, s.key, "duplicate key %s; it is already set at column %d", s.key, p.position(first.keyPos).Column)
			continue
		}
		given[s.key] = s
		if !spec.apply(&q, s.value) {
			msg := fmt.Sprintf("bad %s=%s: want %s", s.key, s.value, spec.accepted)
			if spec.why != nil && spec.why(s.value) != "" {
				msg = fmt.Sprintf("bad %s=%s: %s; want %s", s.key, s.value, spec.why(s.value), spec.accepted)
			}
			if sug := suggest(s.value, spec.enum); sug != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", sug)
			}
			p.errorf(s.valPos, s.key, "%s", msg)
			bad[s.key] = true
		}
	}

	if _, ok := given[KeyName]; !ok && !names.Queue(q.Name) {
		p.errorf(c.Pos(), KeyName, "the default queue name %q of %s is not %s; set name=", q.Name, typeName, names.QueueRuleFor(q.Name))
	}

	// Every key left out, or given a bad value (which sets nothing), takes
	// runtime's default, the one QueueConfig.WithDefaults applies, so that
	// a directive without keys gives DefaultQueueConfig.
	q = q.WithDefaults()

	// Checks across keys. A key with a bad value is not checked against
	// others: it is reported once.
	if conc, ok := given[KeyConcurrency]; ok && !bad[KeyConcurrency] && !bad[KeyPrefetch] && q.Concurrency > q.Prefetch {
		p.errorf(conc.valPos, KeyConcurrency, "concurrency=%d is above %s; want 1..%d", q.Concurrency, describe(given, KeyPrefetch, fmt.Sprint(q.Prefetch)), q.Prefetch)
	}
	if rmax, ok := given[KeyRetryMax]; ok && !bad[KeyRetryMax] && !bad[KeyRetryBase] && q.RetryMax < q.RetryBase {
		p.errorf(rmax.valPos, KeyRetryMax, "retry_max=%s is below %s; want at least %v", rmax.value, describe(given, KeyRetryBase, q.RetryBase.String()), q.RetryBase)
	}

	if m, ok := given[KeyMissed]; ok && !bad[KeyMissed] && q.Schedule == "" {
		p.errorf(m.valPos, KeyMissed, "missed=%s without schedule=; missed says what a schedule does with ticks it missed: add schedule= or drop missed=", m.value)
	}

	if _, ok := given[KeySchedule]; ok && !bad[KeySchedule] && !bad[KeyName] && len(q.Name) > runtime.MaxScheduleNameLen {
		pos, what := c.Pos(), fmt.Sprintf("the default queue name %q", q.Name)
		if n, ok := given[KeyName]; ok {
			pos, what = n.valPos, "name="+q.Name
		}
		p.errorf(pos, KeyName, "%s is %d bytes; with schedule= the schedule is named after the queue, and a schedule name is at most %d bytes: shorten it", what, len(q.Name), runtime.MaxScheduleNameLen)
	}

	if _, ok := given[KeyLimitKey]; ok && !bad[KeyLimitKey] && !bad[KeyName] && len(q.Name) > runtime.MaxKeyedQueueNameLen {
		pos, what := c.Pos(), fmt.Sprintf("the default queue name %q", q.Name)
		if n, ok := given[KeyName]; ok {
			pos, what = n.valPos, "name="+q.Name
		}
		p.errorf(pos, KeyName, "%s is %d bytes; with limit_key= each key's lease is named after the queue and the key, and the queue name is then at most %d bytes: shorten it", what, len(q.Name), runtime.MaxKeyedQueueNameLen)
	}

	if d, ok := given[KeyDelay]; ok && !bad[KeyDelay] && !bad[KeyName] && q.Delay == runtime.DelayLadder {
		if limit := names.MaxLadderQueue(waits.Levels(runtime.DefaultGranularity)); len(q.Name) > limit {
			p.errorf(d.valPos, KeyDelay, "delay=ladder with queue name %q of %d bytes: a ladder wait's routing key is the name after %d words of one bit (%d bytes at the default granularity), and a routing key is at most %d bytes, so the name is at most %d bytes: shorten it or use delay=queue",
				q.Name, len(q.Name), waits.Levels(runtime.DefaultGranularity), 2*waits.Levels(runtime.DefaultGranularity), names.MaxShortString, limit)
		}
	}
	if t, ok := given[KeyQueueType]; ok && !bad[KeyQueueType] && !bad[KeyName] && q.Delay == "" && runtime.DefaultDelay(q.QueueType) == runtime.DelayLadder {
		if limit := names.MaxLadderQueue(waits.Levels(runtime.DefaultGranularity)); len(q.Name) > limit {
			p.errorf(t.valPos, KeyQueueType, "queue_type=quorum holds waits on the ladder by default, and queue name %q is %d bytes: a ladder wait's routing key is the name after %d words of one bit (%d bytes at the default granularity), and a routing key is at most %d bytes, so the name is at most %d bytes: shorten it or add delay=queue",
				q.Name, len(q.Name), waits.Levels(runtime.DefaultGranularity), 2*waits.Levels(runtime.DefaultGranularity), names.MaxShortString, limit)
		}
	}

	if len(p.errs) > before {
		return q, positions{}, false
	}
	if err := q.Validate(); err != nil {
		// The checks above should have caught everything Validate does.
		p.errorf(c.Pos(), "", "resolved queue of %s is invalid: %v", typeName, err)
		return q, positions{}, false
	}
	if s, ok := given[KeyName]; ok {
		pos.name = s.valPos
	}
	if s, ok := given[KeyLimitKey]; ok {
		pos.limitKey = s.valPos
	}
	return q, pos, true
}

// positions are where the values of a directive's keys are that are
// checked after it is resolved, token.NoPos for a key not given.
type positions struct {
	name, limitKey token.Pos
}

// describe names key and its value in a message: "prefetch=10" when given,
// "prefetch (default 10)" when not.
func describe(given map[string]setting, key, value string) string {
	if s, ok := given[key]; ok {
		return key + "=" + s.value
	}
	return key + " (default " + value + ")"
}
