// Package mpfit checks, before github.com/vmihailenco/msgpack/v5 decodes
// msgpack data into a Go value, that every number in the data fits the
// part of the value it lands in.
//
// msgpack/v5 converts numbers as Go conversions do, without a word: 300
// decodes into an int8 as 44, -1 into a uint16 as 65535, 2^64-1 into an
// int64 as -1 (and into a float64 as -1 too), and 2^24+1 into a float32
// rounded. It has no option to refuse them, and registering strict
// decoders would change how every other user of msgpack in the process
// decodes. So a Checker walks the data alongside the Go type and refuses,
// with the field's path, any integer outside its integer field's range,
// any float bound for an integer field (which msgpack refuses too, without
// saying where), and any integer a float field cannot hold exactly. What
// msgpack decodes in some other way is left to it: values of types with
// their own decoding methods (DecodeMsgpack, UnmarshalMsgpack,
// UnmarshalBinary, UnmarshalText), interfaces, and whatever does not match
// its field's kind at all.
package mpfit

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
	"github.com/queuey/queuey/internal/msgpack/mpscan"
	"github.com/queuey/queuey/internal/rules/errs"
)

// Checker checks msgpack data against one Go type.
type Checker struct {
	root     *node // nil when no number can land anywhere in the type
	isStruct bool  // the type is a struct, which a nil would decode into as its zero value
	typ      reflect.Type
}

// node is a part of a Go type that a number can land in.
type node struct {
	typ    reflect.Type
	kind   reflect.Kind
	elem   *node             // Pointer, Slice, Array: the element; Map: the value
	key    *node             // Map
	fields map[string]*field // Struct: the field each map key decodes into, when it needs checking
	keys   []keyField        // Struct: every key, those of list first, in its order
	list   []*field          // Struct: the fields an array decodes into, by position
}

type keyField struct {
	key   string
	field *field
}

type field struct {
	path string // Go field names, joined by dots
	node *node  // nil when nothing needs checking
}

var checkers sync.Map // reflect.Type to *Checker

// For returns the Checker of t, made once per type.
func For(t reflect.Type) *Checker {
	if c, ok := checkers.Load(t); ok {
		return c.(*Checker)
	}
	c, _ := checkers.LoadOrStore(t, &Checker{root: compile(t), isStruct: t.Kind() == reflect.Struct, typ: t})
	return c.(*Checker)
}

// Check reads data, which must be exactly one msgpack value, and returns
// an *Error for the first number in it that msgpack would not decode
// unchanged into the part of the type it lands in. It checks data as
// mpscan.Check does on the way, and returns mpscan.ErrMalformed for what
// that refuses and for bytes after the value, so that a payload off the
// wire is read once before msgpack decodes it. A nil for a struct type is
// refused too, with an *Error: msgpack would decode it as the struct's
// zero value, a job that nobody wrote.
func (c *Checker) Check(data []byte) error {
	r := mpscan.NewReader(data)
	if c.isStruct && r.Nil() {
		return &Error{Type: c.typ, Found: "nil"}
	}
	var err error
	if c.root == nil {
		err = r.Skip()
	} else {
		err = atRoot(c.root.check(r, 0))
	}
	if err != nil {
		return err
	}
	if n := len(r.Rest()); n > 0 {
		return fmt.Errorf("%w: %d bytes after the value: a payload is exactly one msgpack value", mpscan.ErrMalformed, n)
	}
	return nil
}

// Error is a value in msgpack data that msgpack would not decode, or not
// decode unchanged, into the part of the Go type it lands in: the first
// one, in the order msgpack decodes them.
type Error struct {
	// Path is where the value lands, by Go field names from the type
	// checked: Lines[2].Qty, Counts["a"], ByLevel[key] (a map's key);
	// "" for the value as a whole. An embedded struct's fields that
	// msgpack inlines are named through it: Base.ID.
	Path string
	// Key is Path as the data names it: by msgpack keys (lines[2].qty),
	// by position ([3]) for a struct decoded from an array. A key that
	// is not a plain name is quoted: ["a.b"].
	Key string
	// Type is the type the value would be decoded into.
	Type reflect.Type
	// Found is what the data holds there, as mpscan's Describe says:
	// `string "abc"`, "int 300", "array of 3".
	Found string
	// Why says why a number does not fit a number type ("out of its
	// range"); "" when the value is of another msgpack type than the
	// field takes.
	Why string
	// Err is msgpack's error decoding the value alone, when Locate found
	// it; nil for what Check refuses.
	Err error
}

// Why a number does not fit its field.
const (
	outOfRange = "out of its range"
	inexact    = "which it cannot hold exactly"
)

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString("field " + strconv.Quote(e.Path) + " (msgpack key " + strconv.Quote(e.Key) + "): ")
	}
	b.WriteString("want " + TypeString(e.Type) + ", found " + e.Found)
	if e.Why != "" {
		b.WriteString(", " + e.Why)
	}
	if e.Err != nil && (mpfields.HasDecoder(e.Type) || e.Type.Kind() == reflect.Interface) {
		// Its own method, or msgpack's rules for an interface, refused
		// the value: what they said is news.
		b.WriteString(" (" + e.Err.Error() + ")")
	}
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// TypeString names t as an Error does: a named type with its kind
// (orders.Level (int8)), a struct as a map of its fields.
func TypeString(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Struct && !mpfields.HasDecoder(t):
		return t.String() + " (a map of its fields)"
	case t.PkgPath() != "" && t.Kind() != reflect.Struct:
		return t.String() + " (" + t.Kind().String() + ")"
	}
	return t.String()
}

// within prefixes err's paths with where (by Go names) and key (by the
// data's keys), when err is an *Error.
func within(err error, where, key string) error {
	if e, ok := err.(*Error); ok {
		e.Path = where + e.Path
		e.Key = key + e.Key
	}
	return err
}

// atRoot drops the dot that a struct's field leaves at the start of
// err's paths, when err is an *Error.
func atRoot(err error) error {
	if e, ok := err.(*Error); ok {
		e.Path = strings.TrimPrefix(e.Path, ".")
		e.Key = strings.TrimPrefix(e.Key, ".")
	}
	return err
}

// keyPath is a struct's key as a path shows it: .name, or ["a.b"] when
// it is not a plain name.
func keyPath(key []byte) string {
	plain := len(key) > 0
	for _, c := range key {
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return "." + string(key)
	}
	return "[" + strconv.Quote(errs.Clip(string(key))) + "]"
}

// check reads one value inside depth arrays and maps.
func (n *node) check(r *mpscan.Reader, depth int) error {
	if n == nil {
		return r.SkipIn(depth)
	}
	switch n.kind {
	case reflect.Pointer:
		if r.Nil() {
			return nil
		}
		return n.elem.check(r, depth)
	case reflect.Slice, reflect.Array:
		if c, err := r.Peek(); err != nil || !isArray(c) {
			return r.SkipIn(depth) // nil, or what msgpack refuses
		}
		l, err := r.ArrayLen()
		if err == nil && l > 0 {
			err = r.Nest(depth) // an empty one nests nothing
		}
		if err != nil {
			return err
		}
		for i := range l {
			if err := n.elem.check(r, depth+1); err != nil {
				at := "[" + strconv.Itoa(i) + "]"
				return within(err, at, at)
			}
		}
		return nil
	case reflect.Map:
		if c, err := r.Peek(); err != nil || !isMap(c) {
			return r.SkipIn(depth)
		}
		l, _, err := r.MapLen()
		if err == nil && l > 0 {
			err = r.Nest(depth)
		}
		if err != nil {
			return err
		}
		for range l {
			at := *r
			if err := n.key.check(r, depth+1); err != nil {
				return within(err, "[key]", "[key]")
			}
			if err := n.elem.check(r, depth+1); err != nil {
				k := "[" + keyString(&at) + "]"
				return within(err, k, k)
			}
		}
		return nil
	case reflect.Struct:
		return n.checkStruct(r, depth)
	}
	num, ok, err := r.Number()
	if err != nil {
		return err
	}
	if !ok {
		return r.SkipIn(depth)
	}
	if why, ok := fits(num, n.typ); !ok {
		return &Error{Type: n.typ, Found: numberString(num), Why: why}
	}
	return nil
}

// checkStruct checks a struct, which msgpack decodes from a map by key or
// from an array of all its fields by position.
func (n *node) checkStruct(r *mpscan.Reader, depth int) error {
	c, err := r.Peek()
	if err != nil {
		return err
	}
	switch {
	case isMap(c):
		l, _, err := r.MapLen()
		if err == nil && l > 0 {
			err = r.Nest(depth)
		}
		if err != nil {
			return err
		}
		next := 0 // where in n.keys the next key is likely to be
		for range l {
			key, ok, err := r.Str()
			if err == nil && !ok {
				err = r.SkipIn(depth + 1) // msgpack refuses a key that is not a string
			}
			if err != nil {
				return err
			}
			f := n.field(key, &next)
			if f == nil || f.node == nil {
				if err := r.SkipIn(depth + 1); err != nil {
					return err
				}
				continue
			}
			if err := f.node.check(r, depth+1); err != nil {
				return within(err, "."+f.path, keyPath(key))
			}
		}
		return nil
	case isArray(c):
		at := *r
		l, err := r.ArrayLen()
		if err == nil && l > 0 {
			err = r.Nest(depth)
		}
		if err != nil {
			return err
		}
		if l != len(n.list) {
			// msgpack refuses it, or decodes an empty one as the zero
			// value.
			*r = at
			return r.SkipIn(depth)
		}
		for i, f := range n.list {
			if err := f.node.check(r, depth+1); err != nil {
				return within(err, "."+f.path, "["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	}
	return r.SkipIn(depth)
}

// field returns the field key decodes into, if it needs checking. An
// encoder writes the fields in order, so it looks at n.keys from next on
// first, and moves next past what it finds there.
func (n *node) field(key []byte, next *int) *field {
	for i := *next; i < len(n.keys) && i < *next+2; i++ {
		if n.keys[i].key == string(key) {
			*next = i + 1
			return n.keys[i].field
		}
	}
	return n.fields[string(key)]
}

func isArray(c byte) bool { return c&0xf0 == 0x90 || c == 0xdc || c == 0xdd }
func isMap(c byte) bool   { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }

// keyString returns the map key r is at as a path shows it.
func keyString(r *mpscan.Reader) string {
	if s, ok, err := r.Str(); ok && err == nil {
		return strconv.Quote(errs.Clip(string(s)))
	}
	if num, ok, err := r.Number(); ok && err == nil {
		return numberString(num)
	}
	return "?"
}

// numberString describes num as mpscan's Describe does.
func numberString(num mpscan.Number) string {
	switch num.Kind {
	case mpscan.Int:
		return "int " + strconv.FormatInt(num.Int, 10)
	case mpscan.BigUint:
		return "uint " + strconv.FormatUint(num.Uint, 10)
	case mpscan.Float32:
		return "float32 " + strconv.FormatFloat(num.Float, 'g', -1, 32)
	}
	return "float64 " + strconv.FormatFloat(num.Float, 'g', -1, 64)
}

// fits reports whether msgpack decodes num into a t, a number type,
// unchanged, and if not, why ("" for a float bound for an integer, of
// another type than t takes).
func fits(num mpscan.Number, t reflect.Type) (string, bool) {
	isFloat := num.Kind == mpscan.Float32 || num.Kind == mpscan.Float64
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if isFloat {
			return "", false
		}
		bits := t.Bits()
		return outOfRange, num.Kind == mpscan.Int && (bits == 64 || num.Int >= -1<<(bits-1) && num.Int < 1<<(bits-1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if isFloat {
			return "", false
		}
		bits := t.Bits()
		if num.Kind == mpscan.BigUint {
			return outOfRange, bits == 64
		}
		return outOfRange, num.Int >= 0 && (bits == 64 || num.Int < 1<<bits)
	case reflect.Float32:
		switch num.Kind {
		case mpscan.Int:
			return inexact, exact(float64(float32(num.Int)), num.Int)
		case mpscan.BigUint:
			return inexact, false // msgpack reads it as a negative int64
		}
		return "", true // a float64 msgpack refuses itself
	case reflect.Float64:
		switch num.Kind {
		case mpscan.Int:
			return inexact, exact(float64(num.Int), num.Int)
		case mpscan.BigUint:
			return inexact, false
		}
		return "", true
	}
	return "", true
}

// exact reports whether f, i converted to a float, is i.
func exact(f float64, i int64) bool {
	return f < math.MaxInt64 && int64(f) == i
}

// compile returns the node of t, or nil when no number can land in t.
func compile(t reflect.Type) *node {
	c := &compiler{nodes: map[reflect.Type]*node{}}
	root := c.node(t)
	c.prune()
	if !c.live[root] {
		return nil
	}
	return root
}

type compiler struct {
	nodes map[reflect.Type]*node
	all   []*node
	live  map[*node]bool
}

func (c *compiler) node(t reflect.Type) *node {
	if n, ok := c.nodes[t]; ok {
		return n
	}
	if mpfields.HasDecoder(t) {
		return nil
	}
	n := &node{typ: t, kind: t.Kind()}
	switch n.kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
	case reflect.Pointer, reflect.Slice, reflect.Array:
		if n.kind != reflect.Pointer && t.Elem().Kind() == reflect.Uint8 {
			return nil // msgpack decodes bytes from a string or binary value
		}
		c.add(t, n)
		n.elem = c.node(t.Elem())
		return n
	case reflect.Map:
		c.add(t, n)
		n.key, n.elem = c.node(t.Key()), c.node(t.Elem())
		return n
	case reflect.Struct:
		c.add(t, n)
		l := mpfields.Of(mpfields.Reflect{}, t)
		fields := map[*mpfields.Entry[reflect.Type]]*field{}
		fieldOf := func(e *mpfields.Entry[reflect.Type]) *field {
			if f, ok := fields[e]; ok {
				return f
			}
			f := &field{path: e.Path, node: c.node(e.Type)}
			fields[e] = f
			return f
		}
		n.fields = make(map[string]*field, len(l.Keys))
		for key, e := range l.Keys {
			n.fields[key] = fieldOf(e)
		}
		for _, e := range l.List {
			n.list = append(n.list, fieldOf(e))
			n.keys = append(n.keys, keyField{e.Key, n.fields[e.Key]})
		}
		for _, key := range slices.Sorted(maps.Keys(l.Keys)) {
			if !slices.ContainsFunc(l.List, func(e *mpfields.Entry[reflect.Type]) bool { return e.Key == key }) {
				n.keys = append(n.keys, keyField{key, n.fields[key]})
			}
		}
		return n
	default:
		return nil
	}
	c.add(t, n)
	return n
}

func (c *compiler) add(t reflect.Type, n *node) {
	c.nodes[t] = n
	c.all = append(c.all, n)
}

// prune finds the live nodes, those a number can land in, and drops the
// rest from the nodes that hold them, so that a check skips their values
// at once.
func (c *compiler) prune() {
	c.live = map[*node]bool{}
	for changed := true; changed; {
		changed = false
		for _, n := range c.all {
			if c.live[n] {
				continue
			}
			live := false
			switch n.kind {
			case reflect.Pointer, reflect.Slice, reflect.Array:
				live = c.live[n.elem]
			case reflect.Map:
				live = c.live[n.key] || c.live[n.elem]
			case reflect.Struct:
				for _, f := range n.fields {
					live = live || c.live[f.node]
				}
			default:
				live = true
			}
			if live {
				c.live[n] = true
				changed = true
			}
		}
	}
	for _, n := range c.all {
		if !c.live[n.elem] {
			n.elem = nil
		}
		if !c.live[n.key] {
			n.key = nil
		}
		for key, f := range n.fields {
			if !c.live[f.node] {
				f.node = nil
				delete(n.fields, key)
			}
		}
	}
}
