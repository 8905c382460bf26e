package generator

import (
	"fmt"
	"go/types"
	"reflect"
	"strings"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
)

// goTypes is mpfields.Types for go/types.
type goTypes struct{}

var _ mpfields.Types[types.Type] = goTypes{}

func (goTypes) Fields(t types.Type) []mpfields.Field[types.Type] {
	st := t.Underlying().(*types.Struct)
	fs := make([]mpfields.Field[types.Type], st.NumFields())
	for i := range fs {
		f := st.Field(i)
		fs[i] = mpfields.Field[types.Type]{Name: f.Name(), Tag: reflect.StructTag(st.Tag(i)), Exported: f.Exported(), Embedded: f.Embedded(), Type: f.Type()}
	}
	return fs
}

func (goTypes) IsStruct(t types.Type) bool {
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

func (goTypes) Inlinable(t types.Type) (types.Type, bool) {
	for {
		p, ok := t.Underlying().(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	if _, ok := t.Underlying().(*types.Struct); !ok || codecMethod(t, encodeMethods) >= 0 || codecMethod(t, decodeMethods) >= 0 {
		return nil, false
	}
	return t, true
}

// layoutProblem words p, found laying out a struct whose fields are named
// from prefix, as a problem of the job's field top.
func layoutProblem(p mpfields.Problem[types.Type], prefix string, top int) problem {
	later := prefix + p.Later.Path
	pr := problem{top: top, path: later, typ: p.Later.Type}
	switch p.Kind {
	case mpfields.InlineNotStruct:
		pr.why = "msgpack panics on msgpack:\",inline\" for an embedded field that is not a struct; drop the option (msgpack inlines an embedded pointer to a struct without it)"
		return pr
	case mpfields.Recursive:
		pr.why = "msgpack inlines the fields of an embedded struct, and this one is a struct it is part of, so msgpack would recurse until the stack overflows; tag it `msgpack:\",noinline\"` to carry it as a nested map"
		return pr
	}
	earlier := prefix + p.Earlier.Path
	fix := "give one of them a key of its own with a `msgpack:\"name\"` tag"
	if emb := inlinedThrough(p.Later, p.Earlier, prefix); emb != "" {
		fix += fmt.Sprintf(", or tag %s `msgpack:\",noinline\"` to carry it as a nested map", emb)
	}
	switch p.Kind {
	case mpfields.Shadowed:
		pr.why = fmt.Sprintf("its msgpack key %q is the key of field %s already, so msgpack:\",inline\" leaves it out and it would arrive as its zero value; %s",
			p.Key, earlier, fix)
	case mpfields.NotInlined:
		emb := prefix + p.Embedded.Path
		pr.why = fmt.Sprintf("its msgpack key %q is the key of field %s already, so msgpack does not inline the fields of %s but carries it as a nested map, and would drop this field if %s came first; tag %s `msgpack:\",noinline\"` to nest it on purpose, or give one of them a key of its own with a `msgpack:\"name\"` tag",
			p.Key, earlier, emb, emb, emb)
	default:
		var loss string
		switch {
		case p.EarlierClaim == mpfields.Alias:
			loss = "that alias would never apply"
		case p.EarlierClaim == mpfields.EmbeddedName:
			loss = "no nested map would decode into " + earlier
		case p.LaterClaim == mpfields.EmbeddedName:
			loss = "a job that carries " + earlier + " would not decode"
		default:
			loss = earlier + " would arrive as its zero value"
		}
		var its string
		switch p.LaterClaim {
		case mpfields.Alias:
			its = fmt.Sprintf("its msgpack alias %q", p.Key)
		case mpfields.EmbeddedName:
			its = fmt.Sprintf("its name %q, under which msgpack decodes a nested map into this inlined struct,", p.Key)
		default:
			its = fmt.Sprintf("its msgpack key %q", p.Key)
		}
		var also string
		switch p.EarlierClaim {
		case mpfields.Alias:
			also = "an alias of field " + earlier
		case mpfields.EmbeddedName:
			also = "the name of inlined field " + earlier + ", under which msgpack decodes a nested map into it"
		default:
			also = "the key of field " + earlier
		}
		pr.why = fmt.Sprintf("%s is also %s; msgpack decodes that key into this field alone, so %s; %s", its, also, loss, fix)
	}
	return pr
}

// inlinedThrough returns the path of an embedded field that a, or else b,
// is inlined through below the fields they share, or "" when neither is.
func inlinedThrough(a, b *mpfields.Entry[types.Type], prefix string) string {
	shared := 0
	for shared < min(len(a.Index), len(b.Index)) && a.Index[shared] == b.Index[shared] {
		shared++
	}
	for _, e := range []*mpfields.Entry[types.Type]{a, b} {
		if len(e.Index) > shared+1 {
			names := strings.Split(e.Path, ".")
			return prefix + strings.Join(names[:shared+1], ".")
		}
	}
	return ""
}
