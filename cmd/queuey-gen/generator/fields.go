package generator

import (
	"fmt"
	"go/types"
	"reflect"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
)

// problem is one field msgpack cannot carry.
type problem struct {
	top  int        // index of the job's own field it is found through
	path string     // field path from the job, such as ShipOrder.Items[].Ref
	typ  types.Type // the offending type
	why  string
}

// fieldChecker walks a job's type for fields msgpack cannot carry.
type fieldChecker struct {
	top      int                   // the job's field being walked
	seen     map[*types.Named]bool // structs entered, against recursive types
	problems []problem
}

// Encoding and decoding methods msgpack/v5 looks for, in its order of
// preference; the i-th encoder pairs with the i-th decoder.
var (
	encodeMethods = []string{"EncodeMsgpack", "MarshalMsgpack", "MarshalBinary", "MarshalText"}
	decodeMethods = []string{"DecodeMsgpack", "UnmarshalMsgpack", "UnmarshalBinary", "UnmarshalText"}
)

// checkJobFields returns the problems of the fields of job, a struct
// type named name, each with the index of the job's field it is found
// through.
func checkJobFields(job *types.Named, name string) []problem {
	st := job.Underlying().(*types.Struct)
	l := mpfields.Of(goTypes{}, types.Type(job))
	var out []problem
	for i := range st.NumFields() {
		c := &fieldChecker{top: i, seen: map[*types.Named]bool{job: true}}
		c.checkField(st, i, name+".", l.Inlined[i])
		out = append(out, c.problems...)
	}
	for _, p := range l.Problems {
		out = append(out, layoutProblem(p, name+".", p.Later.Index[0]))
	}
	return out
}

// checkStruct checks t, a struct type met as a value of its own, whose
// fields are named from prefix: how msgpack lays out its fields, then each
// field.
func (c *fieldChecker) checkStruct(t types.Type, prefix string) {
	l := mpfields.Of(goTypes{}, t)
	for _, p := range l.Problems {
		c.problems = append(c.problems, layoutProblem(p, prefix, c.top))
	}
	c.checkFields(t, l, prefix)
}

// checkFields checks each carried field of t, a struct type laid out as l.
func (c *fieldChecker) checkFields(t types.Type, l *mpfields.Layout[types.Type], prefix string) {
	st := t.Underlying().(*types.Struct)
	for i := range st.NumFields() {
		c.checkField(st, i, prefix, l.Inlined[i])
	}
}

// checkField checks field i of st; inlined says whether msgpack inlines
// its fields, for an embedded field.
func (c *fieldChecker) checkField(st *types.Struct, i int, prefix string, inlined bool) {
	f := st.Field(i)
	if mpfields.TagName(reflect.StructTag(st.Tag(i))) == "-" || f.Name() == "_msgpack" {
		return
	}
	path := prefix + f.Name()
	if f.Embedded() {
		c.checkEmbedded(f, path, inlined)
		return
	}
	if !f.Exported() {
		if f.Name() != "_" {
			c.add(path, f.Type(), "msgpack skips unexported fields, so it would arrive as its zero value; export it, or tag it `msgpack:\"-\"` to leave it behind on purpose")
		}
		return
	}
	c.check(f.Type(), path)
}

func (c *fieldChecker) checkEmbedded(f *types.Var, path string, inlined bool) {
	t := f.Type()
	ptr, isPtr := t.(*types.Pointer)
	if isPtr {
		t = ptr.Elem()
	}
	_, isStruct := t.Underlying().(*types.Struct)
	switch {
	case !f.Exported() && isPtr && isStruct:
		c.add(path, f.Type(), "msgpack cannot allocate an embedded pointer to an unexported type when it decodes; embed the struct itself, or export its type")
	case !f.Exported() && !isStruct:
		c.add(path, f.Type(), "msgpack encodes an embedded field of an unexported type but cannot set it when it decodes; export the type, or make it a named unexported field")
	case inlined && isStruct:
		// The fields stand in the embedding struct, whose layout
		// covered them.
		if n, ok := types.Unalias(t).(*types.Named); ok {
			if c.seen[n] {
				return
			}
			c.seen[n] = true
		}
		c.checkFields(t, mpfields.Of(goTypes{}, t), path+".")
	default:
		// msgpack carries an unexported embedded struct as it does an
		// exported one.
		c.check(f.Type(), path)
	}
}

func (c *fieldChecker) add(path string, t types.Type, format string, args ...any) {
	c.problems = append(c.problems, problem{top: c.top, path: path, typ: t, why: fmt.Sprintf(format, args...)})
}

// check checks a value of type t found at path.
func (c *fieldChecker) check(t types.Type, path string) {
	if _, isIface := t.Underlying().(*types.Interface); !isIface {
		if enc, dec := codecMethod(t, encodeMethods), codecMethod(t, decodeMethods); enc >= 0 || dec >= 0 {
			switch {
			case dec < 0:
				c.add(path, t, "it has %s but no %s, so it would encode but not decode", encodeMethods[enc], decodeMethods[enc])
			case enc < 0:
				c.add(path, t, "it has %s but no %s, so it would decode but not encode", decodeMethods[dec], encodeMethods[dec])
			case enc != dec:
				c.add(path, t, "it encodes with %s but decodes with %s; give it %s", encodeMethods[enc], decodeMethods[dec], decodeMethods[enc])
			}
			return
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch u.Kind() {
		case types.Complex64, types.Complex128:
			c.add(path, t, "msgpack/v5 has no encoding for complex numbers; use two floats")
		case types.Uintptr:
			c.add(path, t, "msgpack/v5 has no encoder for uintptr; use uint64")
		case types.UnsafePointer:
			c.add(path, t, "an unsafe.Pointer has no value to encode")
		}
	case *types.Pointer:
		c.check(u.Elem(), path)
	case *types.Slice:
		c.check(u.Elem(), path+"[]")
	case *types.Array:
		c.check(u.Elem(), path+"[]")
	case *types.Map:
		c.check(u.Key(), path+"[key]")
		c.check(u.Elem(), path+"[value]")
	case *types.Chan:
		c.add(path, t, "a channel has no value to encode")
	case *types.Signature:
		c.add(path, t, "a function has no value to encode")
	case *types.Interface:
		c.add(path, t, "an interface decodes into generic values (map[string]any, int8, ...), not the type that was enqueued; use a concrete type")
	case *types.Struct:
		if n, ok := types.Unalias(t).(*types.Named); ok {
			if c.seen[n] {
				return
			}
			c.seen[n] = true
		}
		c.checkStruct(t, path+".")
	}
}

// codecMethod returns the index in names of the first method that t or *t
// has, or -1.
func codecMethod(t types.Type, names []string) int {
	if _, isPtr := t.(*types.Pointer); !isPtr {
		t = types.NewPointer(t)
	}
	ms := types.NewMethodSet(t)
	for i, name := range names {
		if ms.Lookup(nil, name) != nil {
			return i
		}
	}
	return -1
}
