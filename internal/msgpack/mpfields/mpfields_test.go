package mpfields

import (
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestMain(m *testing.M) {
	// msgpack logs every key it sees claimed twice; the tests claim many.
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

type base struct{ ID, Note string }

type Base struct{ ID, Note string }

type deeper struct {
	Base
	Extra string
}

type Text struct{ S string }

func (t Text) MarshalText() ([]byte, error)  { return []byte(t.S), nil }
func (t *Text) UnmarshalText(b []byte) error { t.S = string(b); return nil }

type Text2 struct{ S string }

func (t Text2) MarshalText() ([]byte, error)  { return []byte(t.S), nil }
func (t *Text2) UnmarshalText(b []byte) error { t.S = string(b); return nil }

type (
	plain struct {
		A string
		B string `msgpack:"b,omitempty"`
		C string `msgpack:",omitempty"`
		D string `msgpack:"-"`
		//lint:ignore U1000 an unexported field, which msgpack skips: that is what the case checks
		e string
		F string `json:"A"` // json tags are not read
	}
	dupTag struct {
		A string `msgpack:"x"`
		B string `msgpack:"x"`
	}
	tagNamesOther struct {
		A string `msgpack:"B"`
		B string
	}
	embeddedFirst struct {
		Base
		ID string
	}
	outerFirst struct {
		ID string
		Base
	}
	outerFirstInline struct {
		ID   string
		Base `msgpack:",inline"`
	}
	outerFirstNoinline struct {
		ID   string
		Base `msgpack:",noinline"`
	}
	embeddedPointer struct {
		*Base
		Other string
	}
	embeddedUnexported struct {
		base
		Other string
	}
	embeddedTwice struct {
		deeper
		Extra string
	}
	embeddedDeep struct {
		ID string
		deeper
	}
	// Two embedded types with one method name leave it out of the
	// struct's method set, so the struct is encoded field by field and
	// each of them with its own methods.
	embeddedMarshalers struct {
		Text
		Text2
		S string
	}
	aliasLater struct {
		B string
		A string `msgpack:"a,alias:B"`
	}
	aliasEarlier struct {
		A string `msgpack:"a,alias:B"`
		B string
	}
	asArray struct {
		//lint:ignore U1000 msgpack reads this field's tag (as_array); the field itself holds nothing
		_msgpack struct{} `msgpack:",as_array"`
		A        string   `msgpack:"x"`
		B        string   `msgpack:"x"`
	}
	// An embedded struct whose own fields collide: inlined without an
	// option, the later one takes the key; with an inline option, the
	// earlier one keeps it and the later one is left out.
	innerDup       struct{ dupTag }
	innerDupInline struct {
		dupTag `msgpack:",inline"`
	}
	spacedTag struct {
		A string `msgpack:" x , omitempty"`
		B string `msgpack:"x"`
	}
)

// TestLayoutIsMsgpacks: for struct types of every shape Of knows, the
// fields Of says msgpack carries are the ones a round trip through msgpack
// keeps, and the keys Of gives them are the ones msgpack encodes.
func TestLayoutIsMsgpacks(t *testing.T) {
	t.Parallel()
	for _, v := range []any{
		plain{}, dupTag{}, tagNamesOther{}, embeddedFirst{}, outerFirst{}, outerFirstInline{},
		outerFirstNoinline{}, embeddedPointer{}, embeddedUnexported{}, embeddedTwice{}, embeddedDeep{},
		embeddedMarshalers{}, aliasLater{}, aliasEarlier{}, asArray{}, spacedTag{}, innerDup{}, innerDupInline{},
	} {
		typ := reflect.TypeOf(v)
		t.Run(typ.Name(), func(t *testing.T) {
			l := Of(Reflect{}, typ)
			in := reflect.New(typ).Elem()
			leaves := fill(in, "")
			b, err := msgpack.Marshal(in.Addr().Interface())
			if err != nil {
				t.Fatal(err)
			}

			var wantKeys []string
			for _, e := range l.List {
				wantKeys = append(wantKeys, e.Key)
			}
			if !l.AsArray {
				var m map[string]msgpack.RawMessage
				if err := msgpack.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				if got := sortedKeys(m); !slices.Equal(got, sortedSet(wantKeys)) {
					t.Errorf("msgpack encodes keys %q, Of lists %q", got, sortedSet(wantKeys))
				}
			}

			out := reflect.New(typ)
			if err := msgpack.Unmarshal(b, out.Interface()); err != nil {
				t.Fatal(err)
			}
			var kept []string
			read(out.Elem(), "", func(path, s string) {
				if s == path {
					kept = append(kept, path)
				}
			})
			var want []string
			for _, leaf := range leaves {
				if carried(l, leaf) {
					want = append(want, leaf)
				}
			}
			if !slices.Equal(kept, want) {
				t.Errorf("a round trip keeps %q, Of says %q are carried", kept, want)
			}
		})
	}
}

// carried reports whether the string field at path survives a round trip
// by l: it is, or is inside, an encoded field that its key decodes into.
func carried(l *Layout[reflect.Type], path string) bool {
	for _, e := range l.List {
		if (e.Path == path || strings.HasPrefix(path, e.Path+".")) && (l.AsArray || l.Keys[e.Key] == e) {
			return true
		}
	}
	return false
}

// fill sets every exported string field reachable from v, through structs
// and pointers, to its path, and returns the paths.
func fill(v reflect.Value, prefix string) []string {
	var paths []string
	walk(v, prefix, true, func(path string, s reflect.Value) {
		s.SetString(path)
		paths = append(paths, path)
	})
	return paths
}

func read(v reflect.Value, prefix string, f func(path, s string)) {
	walk(v, prefix, false, func(path string, s reflect.Value) { f(path, s.String()) })
}

func walk(v reflect.Value, prefix string, alloc bool, f func(path string, s reflect.Value)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			if !alloc {
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
		}
		walk(v.Elem(), prefix, alloc, f)
	case reflect.String:
		f(prefix, v)
	case reflect.Struct:
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if !sf.IsExported() && !sf.Anonymous {
				continue
			}
			walk(v.Field(i), strings.TrimPrefix(prefix+"."+sf.Name, "."), alloc, f)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

type (
	embeddedName struct {
		X string `msgpack:"Base"`
		Base
	}
	inlinePointer struct {
		*Base `msgpack:",inline"`
	}
	recursive struct {
		//lint:ignore U1000 the type is read only through reflection: a struct that embeds itself
		*recursive
		V string
	}
	recursiveNoinline struct {
		//lint:ignore U1000 the type is read only through reflection: a recursive embedding under noinline
		*recursiveNoinline `msgpack:",noinline"`
		V                  string
	}
)

// TestProblems: each way fields collide is reported once, with the fields
// in declaration order and the key they share.
func TestProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{plain{}, nil},
		{outerFirstNoinline{}, nil},
		{embeddedPointer{}, nil},
		{asArray{}, nil},
		{dupTag{}, []string{`Collision "x": A (Encoded), B (Encoded)`}},
		{spacedTag{}, []string{`Collision "x": A (Encoded), B (Encoded)`}},
		{tagNamesOther{}, []string{`Collision "B": A (Encoded), B (Encoded)`}},
		{embeddedFirst{}, []string{`Collision "ID": Base.ID (Encoded), ID (Encoded)`}},
		{outerFirst{}, []string{`NotInlined "ID": ID (Encoded), Base.ID (Encoded) in Base`}},
		{outerFirstInline{}, []string{`Shadowed "ID": ID (Encoded), Base.ID (Encoded)`}},
		{embeddedTwice{}, []string{`Collision "Extra": deeper.Extra (Encoded), Extra (Encoded)`}},
		{embeddedDeep{}, []string{`NotInlined "ID": ID (Encoded), deeper.Base.ID (Encoded) in deeper`}},
		{innerDup{}, []string{`Collision "x": dupTag.A (Encoded), dupTag.B (Encoded)`}},
		{innerDupInline{}, []string{`Shadowed "x": dupTag.A (Encoded), dupTag.B (Encoded)`}},
		{aliasLater{}, []string{`Collision "B": B (Encoded), A (Alias)`}},
		{aliasEarlier{}, []string{`Collision "B": A (Alias), B (Encoded)`}},
		{embeddedName{}, []string{`Collision "Base": X (Encoded), Base (EmbeddedName)`}},
		{inlinePointer{}, []string{`InlineNotStruct: Base`}},
		{recursive{}, []string{`Recursive: recursive`}},
		{recursiveNoinline{}, nil},
	} {
		typ := reflect.TypeOf(tc.v)
		var got []string
		for _, p := range Of(Reflect{}, typ).Problems {
			got = append(got, p.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: problems\n%s\nwant\n%s", typ.Name(), strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
}

func (p Problem[T]) String() string {
	if p.Earlier == nil {
		return fmt.Sprintf("%s: %s", p.Kind, p.Later.Path)
	}
	s := fmt.Sprintf("%s %q: %s (%s), %s (%s)", p.Kind, p.Key, p.Earlier.Path, p.EarlierClaim, p.Later.Path, p.LaterClaim)
	if p.Embedded != nil {
		s += " in " + p.Embedded.Path
	}
	return s
}

func (k Kind) String() string {
	return [...]string{"Collision", "Shadowed", "NotInlined", "InlineNotStruct", "Recursive"}[k]
}

func (c Claim) String() string { return [...]string{"Encoded", "Alias", "EmbeddedName"}[c] }

// TestTagName reads tags as msgpack does.
func TestTagName(t *testing.T) {
	t.Parallel()
	for tag, want := range map[reflect.StructTag]string{
		``:                       "",
		`json:"x"`:               "",
		`msgpack:"x"`:            "x",
		`msgpack:"x,omitempty"`:  "x",
		`msgpack:",omitempty"`:   "",
		`msgpack:"-"`:            "-",
		`msgpack:"-,omitempty"`:  "-",
		`msgpack:" - "`:          "-",
		`msgpack:"alias:y"`:      "",
		`msgpack:"x,alias:y"`:    "x",
		`msgpack:"'a,b',inline"`: "a,b",
		`msgpack:"x" json:"y"`:   "x",
	} {
		if got := TagName(tag); got != want {
			t.Errorf("TagName(%s) = %q, want %q", tag, got, want)
		}
	}
}
