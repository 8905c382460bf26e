// Package mpfields says which key github.com/vmihailenco/msgpack/v5 gives
// each field of a struct, and which field it decodes each key into, by the
// rules msgpack itself follows (its getFields): the generator uses it to
// refuse structs whose fields would collide, and the runtime to find the
// field a payload's key lands in.
//
// The rules, as msgpack/v5 applies them with its default struct tag (a
// json tag is not read unless an Encoder or Decoder is told to with
// SetCustomStructTag, which queuey never does):
//
//   - Fields are taken in declaration order. A field tagged msgpack:"-"
//     and an unexported field that is not embedded are not carried.
//   - A field's key is the name in its msgpack tag, or else the field's
//     name (for an embedded field, its type's name).
//   - An embedded field tagged msgpack:",inline" has its struct's carried
//     fields (laid out by these same rules) added in its place, except
//     those whose key an earlier field holds already: those are dropped.
//   - An embedded field with no inline or noinline option has its
//     struct's fields added in its place the same way when it is a struct
//     or a pointer to one, msgpack encodes it field by field (it has no
//     encoding or decoding method), and no key of those fields is held
//     already. Otherwise it is carried as one field: a nested map.
//   - An inlined embedded field also keeps its own key for decoding: a
//     nested map under that key decodes into it.
//   - Every carried field is encoded under its key, so two fields may be
//     encoded under one; a key decodes into the field that claimed it last,
//     so the other one's value is lost. An alias option
//     (msgpack:"name,alias:old") claims one more key for decoding.
//   - A struct with a field _msgpack tagged as_array is encoded as an
//     array of its carried fields, in order, and decoded by position.
package mpfields

import (
	"cmp"
	"reflect"
	"slices"

	"github.com/vmihailenco/tagparser/v2"
)

// Field is one field of a struct type, as declared.
type Field[T any] struct {
	Name     string // for an embedded field, its type's name
	Tag      reflect.StructTag
	Exported bool // for an embedded field, whether its type's name is
	Embedded bool
	Type     T
}

// Types is what Of needs to know about one representation of Go types,
// such as reflect.Type or go/types.Type.
type Types[T comparable] interface {
	// Fields returns the fields of t, a struct type, in declaration order.
	Fields(t T) []Field[T]
	// IsStruct reports whether t is a struct type (not a pointer to one).
	IsStruct(t T) bool
	// Inlinable returns the struct type msgpack inlines an embedded field
	// of type t as, when it would without an inline option: t, or what a
	// pointer t points to, when that is a struct with none of the methods
	// msgpack encodes or decodes a value with (EncodeMsgpack,
	// MarshalMsgpack, MarshalBinary, MarshalText, and their decoding
	// counterparts), on the type or on a pointer to it.
	Inlinable(t T) (T, bool)
}

// Entry is one field as msgpack carries it.
type Entry[T any] struct {
	Key   string
	Index []int  // as reflect's FieldByIndex, through inlined embedded fields
	Path  string // the field names along Index, joined by dots
	Type  T
}

// Claim is how a field holds a key.
type Claim int

const (
	// Encoded: the field is encoded under the key and decoded from it.
	Encoded Claim = iota
	// Alias: the field decodes the key as well as its own, from an alias
	// option.
	Alias
	// EmbeddedName: the key is an inlined embedded field's own name, under
	// which a nested map decodes into it.
	EmbeddedName
)

// Kind is a kind of Problem.
type Kind int

const (
	// Collision: Later claims the key Earlier holds. msgpack decodes the
	// key into Later alone.
	Collision Kind = iota
	// Shadowed: an inline option leaves Later out, because Earlier holds
	// its key: Later is neither encoded nor decoded.
	Shadowed
	// NotInlined: msgpack does not inline the embedded field Embedded and
	// carries it as a nested map instead, because its field Later has the
	// key Earlier holds. Had Embedded come before Earlier, Earlier's
	// claim would have overwritten Later's.
	NotInlined
	// InlineNotStruct: Later is embedded with an inline option but is not a
	// struct; msgpack panics laying it out.
	InlineNotStruct
	// Recursive: Later, an embedded field, would be inlined into a struct
	// it is part of; msgpack recurses laying it out until the stack
	// overflows, which ends the process.
	Recursive
)

// Problem is a field msgpack would lose, or a struct it cannot lay out.
// Earlier and Later are in declaration order; Later is the field whose
// declaration makes the problem.
type Problem[T any] struct {
	Kind         Kind
	Key          string
	Earlier      *Entry[T] // nil for InlineNotStruct and Recursive
	EarlierClaim Claim
	Later        *Entry[T]
	LaterClaim   Claim
	Embedded     *Entry[T] // the embedded field, for NotInlined
}

// Layout is how msgpack carries one struct type.
type Layout[T comparable] struct {
	// List holds the fields msgpack encodes, in order (msgpack's
	// fields.List); as an array, they are decoded by position too.
	List []*Entry[T]
	// Keys holds the field msgpack decodes each key of a map into
	// (msgpack's fields.Map).
	Keys map[string]*Entry[T]
	// AsArray is set when the struct is encoded as an array of List.
	AsArray bool
	// Inlined holds the indexes of the embedded fields whose fields are
	// inlined.
	Inlined map[int]bool
	// Problems holds every problem, in the struct and in the embedded
	// structs it inlines, in the order msgpack meets them.
	Problems []Problem[T]

	claims map[string]Claim
}

// TagName returns the name in a field's msgpack tag, as msgpack reads it:
// "-" for a field that is not carried, "" for none.
func TagName(tag reflect.StructTag) string {
	return tagparser.Parse(tag.Get("msgpack")).Name
}

// Of returns the layout of t, a struct type.
func Of[T comparable](ts Types[T], t T) *Layout[T] {
	return layout(ts, t, []T{t})
}

// layout lays out t; open holds the struct types being laid out, t last.
func layout[T comparable](ts Types[T], t T, open []T) *Layout[T] {
	l := &Layout[T]{Keys: map[string]*Entry[T]{}, Inlined: map[int]bool{}, claims: map[string]Claim{}}
	for i, f := range ts.Fields(t) {
		tag := tagparser.Parse(f.Tag.Get("msgpack"))
		if tag.Name == "-" {
			continue
		}
		if f.Name == "_msgpack" {
			l.AsArray = tag.HasOption("as_array") || tag.HasOption("asArray")
		}
		if !f.Exported && !f.Embedded {
			continue
		}
		e := &Entry[T]{Key: cmp.Or(tag.Name, f.Name), Index: []int{i}, Path: f.Name, Type: f.Type}
		if f.Embedded && !tag.HasOption("noinline") && l.embed(ts, e, tag.HasOption("inline"), open) {
			l.Inlined[i] = true
			continue
		}
		l.claim(e.Key, e, Encoded)
		if alias, ok := tag.Options["alias"]; ok {
			l.claim(alias, e, Alias)
		}
	}
	if l.AsArray {
		// Fields are decoded by position: two encoded under one key are
		// both carried.
		l.Problems = slices.DeleteFunc(l.Problems, func(p Problem[T]) bool {
			return p.Kind == Collision && p.EarlierClaim == Encoded && p.LaterClaim == Encoded
		})
	}
	return l
}

// embed inlines the embedded field e, with an inline option or without, as
// msgpack would, and reports whether it did. A field msgpack cannot lay
// out is reported as a problem and counts as inlined: nothing of it is
// carried.
func (l *Layout[T]) embed(ts Types[T], e *Entry[T], explicit bool, open []T) bool {
	st := e.Type
	if explicit {
		if !ts.IsStruct(st) {
			l.Problems = append(l.Problems, Problem[T]{Kind: InlineNotStruct, Later: e})
			return true
		}
	} else {
		var ok bool
		if st, ok = ts.Inlinable(st); !ok {
			return false
		}
	}
	if slices.Contains(open, st) {
		l.Problems = append(l.Problems, Problem[T]{Kind: Recursive, Later: e})
		return true
	}
	inner := layout(ts, st, append(open, st))
	if !explicit {
		taken := false
		for _, g := range inner.List {
			if held, ok := l.Keys[g.Key]; ok {
				taken = true
				l.Problems = append(l.Problems, Problem[T]{Kind: NotInlined, Key: g.Key,
					Earlier: held, EarlierClaim: l.claims[g.Key], Later: within(e, g), Embedded: e})
			}
		}
		if taken {
			return false
		}
	}
	// The inner struct's collisions happen again here, where its fields
	// are claimed one by one (with an inline option, as fields left out);
	// what it leaves out or cannot lay out does not.
	for _, p := range inner.Problems {
		if p.Kind != Collision {
			l.Problems = append(l.Problems, p.within(e))
		}
	}
	for _, g := range inner.List {
		g = within(e, g)
		if held, ok := l.Keys[g.Key]; ok && explicit {
			l.Problems = append(l.Problems, Problem[T]{Kind: Shadowed, Key: g.Key,
				Earlier: held, EarlierClaim: l.claims[g.Key], Later: g, LaterClaim: Encoded})
			continue
		}
		l.claim(g.Key, g, Encoded)
	}
	l.claim(e.Key, e, EmbeddedName)
	return true
}

// claim gives key to e, as msgpack does: the last claim wins.
func (l *Layout[T]) claim(key string, e *Entry[T], how Claim) {
	if held, ok := l.Keys[key]; ok && held != e {
		l.Problems = append(l.Problems, Problem[T]{Kind: Collision, Key: key,
			Earlier: held, EarlierClaim: l.claims[key], Later: e, LaterClaim: how})
	}
	l.Keys[key] = e
	l.claims[key] = how
	if how == Encoded {
		l.List = append(l.List, e)
	}
}

// within returns g, a field of the struct embedded as e, as a field of
// the struct e is in.
func within[T any](e, g *Entry[T]) *Entry[T] {
	if g == nil {
		return nil
	}
	return &Entry[T]{Key: g.Key, Index: append(slices.Clip(e.Index), g.Index...), Path: e.Path + "." + g.Path, Type: g.Type}
}

func (p Problem[T]) within(e *Entry[T]) Problem[T] {
	p.Earlier, p.Later, p.Embedded = within(e, p.Earlier), within(e, p.Later), within(e, p.Embedded)
	return p
}
