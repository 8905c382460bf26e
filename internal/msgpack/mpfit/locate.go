package mpfit

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
	"github.com/queuey/queuey/internal/msgpack/mpscan"
)

// Locate finds where data, which msgpack failed to decode into the
// Checker's type, does not match it: the first value, in the order
// msgpack decodes them, that msgpack refuses to decode into the part of
// the type it lands in. msgpack's own errors say what it met and what it
// wanted ("invalid code=a4 decoding int64"), never where.
//
// It walks arrays, maps and structs as msgpack does (a struct from a map
// by key, or from an array by position), and asks msgpack itself about
// every other value: a number, a string, a []byte, a value of a type with
// its own decoding method, an interface, and a container of another
// msgpack type than its field takes. So a value it blames is one msgpack
// refuses alone, in the type it lands in. It reads data once more and
// decodes each such value once, so its cost is about a decode's; it is
// meant for after a decode failed, and the happy path never calls it.
//
// It returns nil when it finds no value to blame: data that Check
// refuses, or a failure of the decode as a whole.
func (c *Checker) Locate(data []byte) *Error {
	if mpscan.Check(data) != nil {
		return nil
	}
	l := locator{layouts: map[reflect.Type]*mpfields.Layout[reflect.Type]{}}
	r := mpscan.NewReader(data)
	e, _ := atRoot(l.walk(c.typ, r, 0)).(*Error)
	return e
}

type locator struct {
	layouts map[reflect.Type]*mpfields.Layout[reflect.Type]
}

func (l *locator) layout(t reflect.Type) *mpfields.Layout[reflect.Type] {
	lt, ok := l.layouts[t]
	if !ok {
		lt = mpfields.Of(mpfields.Reflect{}, t)
		l.layouts[t] = lt
	}
	return lt
}

// walk reads one value, inside depth arrays and maps, that lands in a t,
// and returns an *Error for the first value in it that msgpack refuses,
// or another error when the data cannot be read (which Check has ruled
// out).
func (l *locator) walk(t reflect.Type, r *mpscan.Reader, depth int) error {
	c, err := r.Peek()
	if err != nil {
		return err
	}
	if mpfields.HasDecoder(t) {
		return l.leaf(t, r, depth)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if r.Nil() {
			return nil
		}
		if t.Elem().Kind() == reflect.Pointer {
			// Left to msgpack: walked, a type that points to itself
			// would loop without reading a byte.
			return l.leaf(t, r, depth)
		}
		return l.walk(t.Elem(), r, depth)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 || !isArray(c) {
			return l.leaf(t, r, depth) // bytes, or another type than an array
		}
		at := *r
		n, err := r.ArrayLen()
		if err != nil {
			return err
		}
		if t.Kind() == reflect.Array && n > t.Len() {
			*r = at
			return l.leaf(t, r, depth) // msgpack refuses more than fit
		}
		for i := range n {
			if err := l.walk(t.Elem(), r, depth+1); err != nil {
				at := "[" + strconv.Itoa(i) + "]"
				return within(err, at, at)
			}
		}
		return nil
	case reflect.Map:
		if !isMap(c) {
			return l.leaf(t, r, depth)
		}
		n, _, err := r.MapLen()
		if err != nil {
			return err
		}
		for range n {
			at := *r
			if err := l.walk(t.Key(), r, depth+1); err != nil {
				return within(err, "[key]", "[key]")
			}
			if err := l.walk(t.Elem(), r, depth+1); err != nil {
				k := "[" + keyString(&at) + "]"
				return within(err, k, k)
			}
		}
		return nil
	case reflect.Struct:
		return l.walkStruct(t, r, c, depth)
	}
	return l.leaf(t, r, depth)
}

// walkStruct reads a struct, whose first byte is c, as msgpack decodes
// it: from a map by key (a key the struct does not have skipped), or from
// an array holding every field by position.
func (l *locator) walkStruct(t reflect.Type, r *mpscan.Reader, c byte, depth int) error {
	lt := l.layout(t)
	switch {
	case isMap(c):
		n, _, err := r.MapLen()
		if err != nil {
			return err
		}
		for range n {
			key, ok, err := r.Str()
			if err != nil {
				return err
			}
			if !ok { // msgpack decodes a key as a string
				return within(l.leaf(reflect.TypeFor[string](), r, depth+1), "[key]", "[key]")
			}
			e := lt.Keys[string(key)]
			if e == nil {
				if err := r.SkipIn(depth + 1); err != nil {
					return err
				}
				continue
			}
			if err := l.walk(e.Type, r, depth+1); err != nil {
				return within(err, "."+e.Path, keyPath(key))
			}
		}
		return nil
	case isArray(c):
		at := *r
		n, err := r.ArrayLen()
		if err != nil {
			return err
		}
		if n != len(lt.List) {
			*r = at
			return l.leaf(t, r, depth) // refused, or an empty one: the zero value
		}
		for i, e := range lt.List {
			if err := l.walk(e.Type, r, depth+1); err != nil {
				return within(err, "."+e.Path, "["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	}
	return l.leaf(t, r, depth)
}

// leaf reads one value that lands in a t and asks msgpack to decode it
// alone into a new t, returning an *Error when it refuses.
func (l *locator) leaf(t reflect.Type, r *mpscan.Reader, depth int) error {
	at := *r
	found := r.Describe()
	if err := r.SkipIn(depth); err != nil {
		return err
	}
	value := at.Rest()[:len(at.Rest())-len(r.Rest())]
	if err := decodeValue(value, t); err != nil {
		return &Error{Type: t, Found: found, Err: err}
	}
	return nil
}

// decodeValue decodes data into a new t as msgpack decodes a field of
// type t (msgpack.Unmarshal takes other ways for some types, a *time.Time
// among them), with a panic of msgpack's turned into an error: msgpack/v5
// panics decoding a nil into a value of a struct type with its own
// decoding method, such as a time.Time.
func decodeValue(data []byte, t reflect.Type) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("msgpack panicked: %v", r)
		}
	}()
	return msgpack.NewDecoder(bytes.NewReader(data)).DecodeValue(reflect.New(t).Elem())
}
