package mpfields

import (
	"encoding"
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
)

// Reflect is Types for reflect.Type, with msgpack's own method checks.
type Reflect struct{}

var _ Types[reflect.Type] = Reflect{}

// Fields implements Types.
func (Reflect) Fields(t reflect.Type) []Field[reflect.Type] {
	fs := make([]Field[reflect.Type], t.NumField())
	for i := range fs {
		f := t.Field(i)
		fs[i] = Field[reflect.Type]{Name: f.Name, Tag: f.Tag, Exported: f.IsExported(), Embedded: f.Anonymous, Type: f.Type}
	}
	return fs
}

// IsStruct implements Types.
func (Reflect) IsStruct(t reflect.Type) bool { return t.Kind() == reflect.Struct }

// Inlinable implements Types.
func (Reflect) Inlinable(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || HasEncoder(t) || HasDecoder(t) {
		return nil, false
	}
	return t, true
}

var (
	encoders = []reflect.Type{
		reflect.TypeFor[msgpack.CustomEncoder](),
		reflect.TypeFor[msgpack.Marshaler](),
		reflect.TypeFor[encoding.BinaryMarshaler](),
		reflect.TypeFor[encoding.TextMarshaler](),
	}
	decoders = []reflect.Type{
		reflect.TypeFor[msgpack.CustomDecoder](),
		reflect.TypeFor[msgpack.Unmarshaler](),
		reflect.TypeFor[encoding.BinaryUnmarshaler](),
		reflect.TypeFor[encoding.TextUnmarshaler](),
	}
)

// HasEncoder reports whether msgpack encodes a t with a method of t or of
// *t rather than by its kind.
func HasEncoder(t reflect.Type) bool { return implementsAny(t, encoders) }

// HasDecoder reports whether msgpack decodes a t with a method of t or of
// *t rather than by its kind.
func HasDecoder(t reflect.Type) bool { return implementsAny(t, decoders) }

func implementsAny(t reflect.Type, ifaces []reflect.Type) bool {
	pt := t
	if t.Kind() != reflect.Pointer {
		pt = reflect.PointerTo(t)
	}
	for _, iface := range ifaces {
		if t.Implements(iface) || pt.Implements(iface) {
			return true
		}
	}
	return false
}
