package generator

import (
	"fmt"
	"go/types"
	"reflect"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/annotations"
	"github.com/queuey/queuey/internal/msgpack/mpfields"
)

// checkLimitKey reports, at the limit_key= value of j, a limit key that
// names no field a worker can read a key from: the field must be declared
// in the job struct itself, be carried by msgpack (the worker reads it
// from the decoded job) and be of a string, signed or unsigned integer or
// bool kind, whose values the worker tells apart by their text.
func checkLimitKey(p *packages.Package, j annotations.Job, st *types.Struct) []string {
	name := j.Queue.LimitKey
	if name == "" {
		return nil
	}
	pos := p.Fset.Position(j.LimitKeyPos)
	wrong := func(format string, args ...any) []string {
		return []string{fmt.Sprintf("%s: bad %s=%s: %s; want an exported field declared in %s and carried by msgpack, of a string, integer or bool type or a named type of one%s",
			pos, annotations.KeyLimitKey, name, fmt.Sprintf(format, args...), j.Type, candidates(st, j.Type))}
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		if f.Name() != name {
			continue
		}
		if mpfields.TagName(reflect.StructTag(st.Tag(i))) == "-" {
			return wrong("field %s of %s is tagged `msgpack:\"-\"`, so msgpack does not carry it and every job would arrive with the same key, its zero value", name, j.Type)
		}
		if !keyKind(f.Type()) {
			return wrong("field %s of %s is of type %s", name, j.Type, types.TypeString(f.Type(), types.RelativeTo(p.Types)))
		}
		return nil
	}
	obj, index, _ := types.LookupFieldOrMethod(types.NewPointer(p.Types.Scope().Lookup(j.Type).Type()), false, p.Types, name)
	if v, ok := obj.(*types.Var); ok && v.IsField() && len(index) > 1 {
		return wrong("%s is a field of %s, which %s embeds, not of %s itself", name, st.Field(index[0]).Name(), j.Type, j.Type)
	}
	return wrong("%s has no field %s", j.Type, name)
}

// keyKind reports whether t is of a kind a limit key is read from.
func keyKind(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	if !ok {
		return false
	}
	switch b.Kind() {
	case types.String, types.Bool,
		types.Int, types.Int8, types.Int16, types.Int32, types.Int64,
		types.Uint, types.Uint8, types.Uint16, types.Uint32, types.Uint64:
		return true
	}
	return false
}

// candidates lists, for a message, the fields of st, the struct of job
// type typ, that limit_key= would take.
func candidates(st *types.Struct, typ string) string {
	var names []string
	for i := range st.NumFields() {
		f := st.Field(i)
		if f.Exported() && keyKind(f.Type()) && mpfields.TagName(reflect.StructTag(st.Tag(i))) != "-" {
			names = append(names, f.Name())
		}
	}
	switch len(names) {
	case 0:
		return "; " + typ + " has none"
	case 1:
		return ", such as " + names[0]
	}
	return ", such as " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
