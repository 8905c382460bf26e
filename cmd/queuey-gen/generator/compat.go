package generator

import (
	"fmt"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// change is one difference between a recorded payload schema and the
// job structs now: breaking when a job in flight, written as recorded,
// would not decode into the struct now, or would lose a value, or would
// no longer reach its handler.
type change struct {
	pos      token.Position
	breaking bool
	msg      string
}

func (c change) String() string {
	what := "safe change"
	if c.breaking {
		what = "breaking change"
	}
	switch {
	case c.pos.IsValid():
	case c.pos.Filename != "":
		return c.pos.Filename + ": " + what + ": " + c.msg
	default:
		return what + ": " + c.msg
	}
	return c.pos.String() + ": " + what + ": " + c.msg
}

// migrateHint ends the message of every change to a queue's arguments.
const migrateHint = "jobs in flight stay on the queue as it was declared; move them with queuey queues migrate (docs/operating.md)"

// comparison compares a recorded schema, old, with now, and makes merged:
// now, keeping the keys of removed fields that jobs in flight may still
// carry.
type comparison struct {
	old, now *record
	merged   *record
	where    token.Position // the record's file, for what has no place in the source
	seen     map[[2]string]bool
	changes  []change
}

// compareRecords returns the changes from old to now, and the record to
// write: now, with the removed keys of old that no field reads.
func compareRecords(old, now *record, where token.Position) ([]change, *record) {
	merged := &record{Format: now.Format, About: now.About, Jobs: now.Jobs, Types: recordStructs{}}
	for name, s := range now.Types {
		c := *s
		c.Fields = slices.Clone(s.Fields)
		merged.Types[name] = &c
	}
	c := &comparison{old: old, now: now, merged: merged, where: where, seen: map[[2]string]bool{}}
	c.jobs()
	slices.SortStableFunc(c.changes, func(a, b change) int { return comparePositioned(a.String(), b.String()) })
	return c.changes, merged
}

func (c *comparison) add(pos token.Position, breaking bool, format string, args ...any) {
	if !pos.IsValid() {
		pos = c.where
	}
	c.changes = append(c.changes, change{pos: pos, breaking: breaking, msg: fmt.Sprintf(format, args...)})
}

func (c *comparison) jobs() {
	for _, o := range c.old.Jobs {
		i := slices.IndexFunc(c.now.Jobs, func(j recordJob) bool { return j.Type == o.Type })
		if i < 0 {
			i = slices.IndexFunc(c.now.Jobs, func(j recordJob) bool { return j.Queue == o.Queue })
		}
		if i < 0 {
			c.add(token.Position{}, true, "job %s (queue %q) is gone: jobs in flight on its queue are no longer handled; drain the queue before the workers that handle it stop",
				o.Kind, o.Queue)
			continue
		}
		n := c.now.Jobs[i]
		if o.Kind != n.Kind {
			c.add(n.pos, true, "job %s is now of kind %s (a type or package renamed): jobs in flight carry kind %s, which the worker of %s dead-letters",
				o.Kind, n.Kind, o.Kind, n.Kind)
		}
		if o.Queue != n.Queue {
			c.add(n.pos, true, "job %s moves from queue %q to %q: %s", n.Kind, o.Queue, n.Queue, migrateHint)
		}
		if o.QueueType != n.QueueType {
			c.add(n.pos, true, "queue %q of job %s changes queue_type from %s to %s, which the broker refuses to redeclare; %s", n.Queue, n.Kind, o.QueueType, n.QueueType, migrateHint)
		}
		if o.MaxPriority != n.MaxPriority {
			c.add(n.pos, true, "queue %q of job %s changes max_priority from %d to %d, which the broker refuses to redeclare; %s", n.Queue, n.Kind, o.MaxPriority, n.MaxPriority, migrateHint)
		}
		c.types(o.Payload, n.Payload, n.Type, n.pos)
	}
	for _, n := range c.now.Jobs {
		if !slices.ContainsFunc(c.old.Jobs, func(o recordJob) bool { return o.Type == n.Type || o.Queue == n.Queue }) {
			c.add(n.pos, false, "job %s is new (queue %q)", n.Kind, n.Queue)
		}
	}
}

// structs compares struct old of the record with struct now, met at path;
// pos is where to report what has no field of its own.
func (c *comparison) structs(oldName, nowName, path string, pos token.Position) {
	if c.seen[[2]string{oldName, nowName}] {
		return
	}
	c.seen[[2]string{oldName, nowName}] = true
	o, n := c.old.Types[oldName], c.now.Types[nowName]
	if o == nil || n == nil {
		c.add(pos, true, "%s: the record names struct %s, which it does not lay out; restore the record from version control", path, oldName)
		return
	}
	if n.pos.IsValid() {
		pos = n.pos
	}
	if o.AsArray != n.AsArray {
		from, to := "a map", "an array (as_array)"
		if o.AsArray {
			from, to = to, from
		}
		c.add(pos, true, "%s is carried as %s now, not as %s: a job in flight does not decode", path, to, from)
		return
	}
	if n.AsArray {
		c.arrayFields(o, n, path, pos)
		return
	}
	c.mapFields(o, n, nowName, path, pos)
}

// arrayFields compares the fields of two structs carried as arrays, which
// msgpack decodes by position and refuses when their count differs.
func (c *comparison) arrayFields(o, n *recordStruct, path string, pos token.Position) {
	if len(o.Fields) != len(n.Fields) {
		c.add(pos, true, "%s has %d fields now, not %d: msgpack refuses a struct carried as an array (as_array) whose field count differs, so a job in flight does not decode",
			path, len(n.Fields), len(o.Fields))
		return
	}
	for i, of := range o.Fields {
		nf := n.Fields[i]
		fpath := path + "." + nf.Go
		if of.Go != nf.Go {
			if j := slices.IndexFunc(n.Fields, func(f recordField) bool { return f.Go == of.Go }); j >= 0 {
				c.add(nf.pos, true, "%s.%s moves from position %d to %d: a struct carried as an array (as_array) is decoded by position, so a job in flight puts its value in %s",
					path, of.Go, i, j, fpath)
				continue
			}
			c.add(nf.pos, false, "%s is field %s renamed in Go: a struct carried as an array (as_array) is decoded by position", fpath, of.Go)
		}
		c.types(of.Type, nf.Type, fpath, nf.pos)
	}
}

// mapFields compares the fields of two structs carried as maps, which
// msgpack decodes by key, skipping the keys no field reads.
func (c *comparison) mapFields(o, n *recordStruct, nowName, path string, pos token.Position) {
	reads := map[string]recordField{}
	for _, f := range n.Fields {
		reads[f.Key] = f
		for _, a := range f.Aliases {
			reads[a] = f
		}
	}
	known := map[string]bool{}
	for _, of := range o.Fields {
		known[of.Key] = true
		nf, read := reads[of.Key]
		switch {
		case read && of.Removed:
			c.add(nf.pos, false, "%s.%s reads key %q, which a removed field of type %s had: jobs in flight may carry it", path, nf.Go, of.Key, of.Type)
			c.types(of.Type, nf.Type, fmt.Sprintf("%s.%s (reading key %q of a removed field)", path, nf.Go, of.Key), nf.pos)
		case read:
			fpath := path + "." + nf.Go
			if nf.Go != of.Go {
				c.add(nf.pos, false, "%s is field %s renamed in Go; its msgpack key %q is kept", fpath, of.Go, of.Key)
			}
			if nf.Key != of.Key {
				c.add(nf.pos, false, "%s reads the old key %q through its alias: jobs in flight keep their value", fpath, of.Key)
			}
			if nf.OmitEmpty != of.OmitEmpty {
				c.add(nf.pos, false, "%s changes omitempty: a missing key and a zero value decode alike", fpath)
			}
			c.types(of.Type, nf.Type, fpath, nf.pos)
		case of.Removed:
			c.retire(nowName, of)
		default:
			c.retire(nowName, of)
			if i := slices.IndexFunc(n.Fields, func(f recordField) bool { return f.Go == of.Go }); i >= 0 {
				nf := n.Fields[i]
				c.add(nf.pos, true, "%s.%s: msgpack key renamed from %q to %q: jobs in flight carry %q, which no field reads any more, so its value is lost; keep the old key with `msgpack:\"%s,alias:%s\"`",
					path, nf.Go, of.Key, nf.Key, of.Key, nf.Key, of.Key)
				continue
			}
			c.add(pos, false, "%s.%s is removed: jobs in flight carry key %q, which msgpack skips; the record keeps the key, so that no later field reads it as another type",
				path, of.Go, of.Key)
		}
	}
	for _, nf := range n.Fields {
		if !known[nf.Key] && !slices.ContainsFunc(nf.Aliases, func(a string) bool { return known[a] }) {
			c.add(nf.pos, false, "%s.%s is added: jobs in flight lack key %q, so it decodes as its zero value", path, nf.Go, nf.Key)
		}
	}
}

// retire keeps the key of removed field f in struct name of the merged
// record.
func (c *comparison) retire(name string, f recordField) {
	s := c.merged.Types[name]
	if slices.ContainsFunc(s.Fields, func(g recordField) bool { return g.Key == f.Key }) {
		return
	}
	f.Removed, f.OmitEmpty, f.Aliases = true, false, nil
	s.Fields = append(s.Fields, f)
}

// types compares wire types old and now of the value at path.
func (c *comparison) types(old, now, path string, pos token.Position) {
	o, n := parseWire(old), parseWire(now)
	switch {
	case o.kind == "*" && n.kind == "*":
		c.types(o.elem, n.elem, path, pos)
		return
	case o.kind == "*":
		c.add(pos, false, "%s is no pointer now: a nil in flight decodes as the zero value", path)
		c.types(o.elem, now, path, pos)
		return
	case n.kind == "*":
		c.types(old, n.elem, path, pos)
		return
	case o.kind == "struct" && n.kind == "struct":
		c.structs(old, now, path, pos)
		return
	case o.kind == "[]" && n.kind == "[]":
		c.types(o.elem, n.elem, path+"[]", pos)
		return
	case o.kind == "[N]" && n.kind == "[]":
		c.add(pos, false, "%s changes from an array to a slice: msgpack decodes the array's elements into it", path)
		c.types(o.elem, n.elem, path+"[]", pos)
		return
	case o.kind == "[N]" && n.kind == "[N]":
		switch {
		case n.n < o.n:
			c.add(pos, true, "%s shrinks from %s to %s: msgpack refuses an array longer than its field, so a job in flight does not decode", path, old, now)
			return
		case n.n > o.n:
			c.add(pos, false, "%s grows from %d to %d elements: the elements a job in flight lacks are zero values", path, o.n, n.n)
		}
		c.types(o.elem, n.elem, path+"[]", pos)
		return
	case o.kind == "map" && n.kind == "map":
		c.types(o.key, n.key, path+"[key]", pos)
		c.types(o.elem, n.elem, path+"[value]", pos)
		return
	case old == now:
		return
	}
	if why, ok := widens(old, now); ok {
		c.add(pos, false, "%s changes from %s to %s: %s", path, old, now, why)
		return
	} else if why != "" {
		c.add(pos, true, "%s changes from %s to %s: %s", path, old, now, why)
		return
	}
	c.add(pos, true, "%s changes type from %s to %s: a job in flight that carries it does not decode, and is dead-lettered", path, old, now)
}

// widens says whether a value of wire type old, a scalar, decodes into a
// field of wire type now unchanged, and why; why is empty when the types
// are of different classes altogether.
func widens(old, now string) (why string, ok bool) {
	switch {
	case (old == "string" && now == "bytes") || (old == "bytes" && now == "string"):
		return "msgpack decodes a string and bytes into either", true
	case strings.HasPrefix(old, "bin[") && now == "bytes":
		return "msgpack decodes the bytes of an array into a slice", true
	case strings.HasPrefix(old, "bin[") && strings.HasPrefix(now, "bin["):
		if parseWire("["+old[4:]+"byte").n <= parseWire("["+now[4:]+"byte").n {
			return "msgpack decodes a shorter byte array into a longer one", true
		}
		return "msgpack refuses bytes longer than the array, so a job in flight does not decode", false
	case old == "float32" && now == "float64":
		return "every float32 is a float64", true
	case old == "float64" && now == "float32":
		return "msgpack refuses a float64 for a float32, so a job in flight that carries one does not decode", false
	}
	os, ob, oint := intType(old)
	ns, nb, nint := intType(now)
	switch {
	case oint && nint:
		if (os == ns && nb >= ob) || (!os && ns && nb > ob) {
			return "every value of the old type fits", true
		}
		if os && !ns {
			return "a negative value in flight does not fit, and its job is dead-lettered", false
		}
		return "a value in flight that does not fit the narrower type is refused, and its job is dead-lettered", false
	case oint && (now == "float32" || now == "float64"):
		mant := 24
		if now == "float64" {
			mant = 53
		}
		bits := ob
		if os {
			bits--
		}
		if bits <= mant {
			return "every value of the old type is a " + now + " exactly", true
		}
		return "an integer in flight that the float cannot hold exactly is refused, and its job is dead-lettered", false
	case (old == "float32" || old == "float64") && nint:
		return "msgpack refuses a float for an integer field, so a job in flight does not decode", false
	}
	return "", false
}

// intType returns whether wire type t is an integer, whether it is
// signed, and its bits.
func intType(t string) (signed bool, bits int, ok bool) {
	switch t {
	case "int8", "int16", "int32", "int64":
		n, _ := strconv.Atoi(t[3:])
		return true, n, true
	case "uint8", "uint16", "uint32", "uint64":
		n, _ := strconv.Atoi(t[4:])
		return false, n, true
	}
	return false, 0, false
}

// wire is a parsed wire type: kind "*", "[]", "[N]" (n), "map" (key),
// with elem; "struct" for a struct's name; "" for a scalar.
type wire struct {
	kind      string
	n         int
	key, elem string
}

// parseWire splits wire type t, as wireType writes it, at its outermost
// constructor.
func parseWire(t string) wire {
	switch {
	case strings.HasPrefix(t, "*"):
		return wire{kind: "*", elem: t[1:]}
	case strings.HasPrefix(t, "[]"):
		return wire{kind: "[]", elem: t[2:]}
	case strings.HasPrefix(t, "["):
		end := strings.IndexByte(t, ']')
		n, _ := strconv.Atoi(t[1:end])
		return wire{kind: "[N]", n: n, elem: t[end+1:]}
	case strings.HasPrefix(t, "map["):
		depth := 0
		for i := 3; i < len(t); i++ {
			switch t[i] {
			case '[':
				depth++
			case ']':
				depth--
				if depth == 0 {
					return wire{kind: "map", key: t[4:i], elem: t[i+1:]}
				}
			}
		}
	}
	switch {
	case t == "bool", t == "string", t == "bytes", t == "time", t == "float32", t == "float64",
		strings.HasPrefix(t, "bin["), strings.HasSuffix(t, ")"), strings.HasPrefix(t, "?"):
		return wire{}
	}
	if _, _, ok := intType(t); ok {
		return wire{}
	}
	return wire{kind: "struct"}
}
