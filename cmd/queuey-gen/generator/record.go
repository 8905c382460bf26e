package generator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/token"
	"go/types"
	"maps"
	"reflect"
	"slices"
	"strconv"

	"github.com/vmihailenco/tagparser/v2"
	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
)

// RecordName is the payload schema record queuey-gen keeps beside each
// queuey_gen.go: what its jobs' payloads look like on the wire, as last
// generated, so that a change to a job struct can be compared with the
// jobs already in flight (docs/upgrades.md).
const RecordName = "queuey_schema.json"

// recordFormat is the version of the record's layout, its first key.
const recordFormat = 1

// recordAbout is the record's second key, for whoever opens the file.
const recordAbout = "queuey-gen's record of this package's job payloads as jobs in flight carry them. " +
	"go generate refreshes it and refuses a change that jobs in flight would not survive; " +
	"go tool queuey-gen -accept records such a change on purpose. See queuey's docs/upgrades.md."

// record is the payload schema of one package's jobs.
type record struct {
	Format int           `json:"queuey_schema"`
	About  string        `json:"about"`
	Jobs   []recordJob   `json:"jobs"`
	Types  recordStructs `json:"types"`
}

type recordStructs = map[string]*recordStruct

// recordJob is one job: the queue arguments a change of which strands or
// refuses the jobs in flight, and Payload, the name of its struct in
// Types.
type recordJob struct {
	Type        string `json:"type"`
	Kind        string `json:"kind"`
	Queue       string `json:"queue"`
	QueueType   string `json:"queue_type"`
	MaxPriority int    `json:"max_priority"`
	Payload     string `json:"payload"`

	pos token.Position // of the type's name, when it was built from source
}

// recordStruct is a struct as msgpack carries it: a map of its fields by
// key, or an array of them by position.
type recordStruct struct {
	AsArray bool          `json:"as_array,omitempty"`
	Fields  []recordField `json:"fields"`

	pos token.Position // of the type's declaration, when it was built from source
}

// recordField is one field of a struct. Type is its wire type (see
// wireType). Removed marks a key no field carries any more that old jobs
// may still hold: kept so that no later field reads it as another type.
type recordField struct {
	Key       string   `json:"key"`
	Go        string   `json:"go"`
	Type      string   `json:"type"`
	Aliases   []string `json:"aliases,omitempty"`
	OmitEmpty bool     `json:"omitempty,omitempty"`
	Removed   bool     `json:"removed,omitempty"`

	pos token.Position // of the field's declaration, when it was built from source
}

// recordOf returns the record of the jobs of p, which jobsOf has checked.
func recordOf(p *packages.Package) (*record, error) {
	jobs, err := jobsOf(p)
	if err != nil {
		return nil, err
	}
	r := &record{Format: recordFormat, About: recordAbout, Jobs: []recordJob{}, Types: recordStructs{}}
	b := &recordBuilder{fset: p.Fset, types: r.Types, owner: map[string]types.Type{}}
	for _, j := range jobs {
		obj := p.Types.Scope().Lookup(j.Type).(*types.TypeName)
		q := j.Queue
		r.Jobs = append(r.Jobs, recordJob{
			Type: j.Type, Kind: q.Kind, Queue: q.Name, QueueType: string(q.QueueType),
			MaxPriority: max(q.MaxPriority, 0), Payload: b.wireType(obj.Type(), ""),
			pos: p.Fset.Position(j.Pos),
		})
	}
	slices.SortFunc(r.Jobs, func(a, b recordJob) int { return cmp.Compare(a.Type, b.Type) })
	return r, nil
}

// recordBuilder adds the structs a job's payload holds to types.
type recordBuilder struct {
	fset  *token.FileSet
	types recordStructs
	owner map[string]types.Type
}

// wireType returns the wire type of t, a value met at path (a struct's
// name and field names, for naming an anonymous struct):
//
//	bool, string, bytes, int8 … int64, uint8 … uint64, float32, float64
//	time              a time.Time: msgpack's timestamp extension
//	bin[N]            a [N]byte
//	*T, []T, [N]T, map[K]V
//	text(pkg.T)       a type encoded by its MarshalText (binary(…) by
//	                  MarshalBinary, msgpack(…) by its msgpack methods)
//	pkg.T             a struct, laid out under that name in the record
//
// int and uint are int64 and uint64, as on every 64-bit platform; a named
// number is its underlying type, as the wire sees it.
func (b *recordBuilder) wireType(t types.Type, path string) string {
	if named, ok := types.Unalias(t).(*types.Named); ok {
		if obj := named.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == "time" && obj.Name() == "Time" {
			return "time"
		}
	}
	if _, isIface := t.Underlying().(*types.Interface); !isIface {
		if enc := codecMethod(t, encodeMethods); enc >= 0 {
			name := types.TypeString(t, func(p *types.Package) string { return p.Name() })
			switch encodeMethods[enc] {
			case "MarshalText":
				return "text(" + name + ")"
			case "MarshalBinary":
				return "binary(" + name + ")"
			}
			return "msgpack(" + name + ")"
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return basicWire(u)
	case *types.Pointer:
		return "*" + b.wireType(u.Elem(), path)
	case *types.Slice:
		if isByte(u.Elem()) {
			return "bytes"
		}
		return "[]" + b.wireType(u.Elem(), path+"[]")
	case *types.Array:
		if isByte(u.Elem()) {
			return fmt.Sprintf("bin[%d]", u.Len())
		}
		return fmt.Sprintf("[%d]%s", u.Len(), b.wireType(u.Elem(), path+"[]"))
	case *types.Map:
		return "map[" + b.wireType(u.Key(), path+"[key]") + "]" + b.wireType(u.Elem(), path+"[value]")
	case *types.Struct:
		name := path
		var pos token.Position
		if named, ok := types.Unalias(t).(*types.Named); ok {
			name = b.defName(named)
			pos = b.fset.Position(named.Obj().Pos())
		}
		if _, done := b.types[name]; !done {
			s := &recordStruct{pos: pos}
			b.types[name] = s // a recursive reference finds it
			b.owner[name] = t
			b.fill(s, t, name)
		}
		return name
	}
	return "?" + t.String()
}

// defName names t as kinds are named, package.Type, or by its package's
// path when two packages of one name have a type of that name.
func (b *recordBuilder) defName(t *types.Named) string {
	name := types.TypeString(t, func(p *types.Package) string { return p.Name() })
	if other, ok := b.owner[name]; ok && !types.Identical(other, t) {
		return types.TypeString(t, nil)
	}
	return name
}

// fill lays out struct type t, named name in the record, into s.
func (b *recordBuilder) fill(s *recordStruct, t types.Type, name string) {
	l := mpfields.Of(goTypes{}, t)
	s.AsArray = l.AsArray
	s.Fields = []recordField{}
	for _, e := range l.List {
		f, tag := fieldAt(t, e.Index)
		opts := tagparser.Parse(tag.Get("msgpack"))
		rf := recordField{Key: e.Key, Go: e.Path, OmitEmpty: opts.HasOption("omitempty"), pos: b.fset.Position(f.Pos())}
		if alias, ok := opts.Options["alias"]; ok {
			rf.Aliases = []string{alias}
		}
		rf.Type = b.wireType(e.Type, name+"."+e.Path)
		s.Fields = append(s.Fields, rf)
	}
}

// fieldAt returns the field of struct type t at index, through embedded
// structs, and its tag.
func fieldAt(t types.Type, index []int) (*types.Var, reflect.StructTag) {
	var f *types.Var
	var tag string
	for _, i := range index {
		for {
			if p, ok := t.Underlying().(*types.Pointer); ok {
				t = p.Elem()
				continue
			}
			break
		}
		st := t.Underlying().(*types.Struct)
		f, tag = st.Field(i), st.Tag(i)
		t = f.Type()
	}
	return f, reflect.StructTag(tag)
}

func isByte(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.Byte
}

// basicWire names a basic type by its kind: byte is uint8, rune int32.
func basicWire(u *types.Basic) string {
	switch u.Kind() {
	case types.Int:
		return "int64"
	case types.Uint:
		return "uint64"
	}
	return types.Typ[u.Kind()].Name()
}

// marshal writes r with one line per job and per field, keys in a fixed
// order, so that a change to a job shows as a change of its lines.
func (r *record) marshal() []byte {
	var buf bytes.Buffer
	line := func(indent int, v any, comma bool) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // strings, ints and bools only
		}
		buf.WriteString(fmt.Sprintf("%*s", indent, ""))
		buf.Write(b)
		if comma {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	quote := strconv.Quote
	fmt.Fprintf(&buf, "{\n  \"queuey_schema\": %d,\n  \"about\": %s,\n  \"jobs\": [\n", r.Format, quote(r.About))
	for i, j := range r.Jobs {
		line(4, j, i < len(r.Jobs)-1)
	}
	buf.WriteString("  ],\n  \"types\": {\n")
	names := slices.Sorted(maps.Keys(r.Types))
	for i, name := range names {
		s := r.Types[name]
		asArray := ""
		if s.AsArray {
			asArray = "\"as_array\": true, "
		}
		fmt.Fprintf(&buf, "    %s: {%s\"fields\": [\n", quote(name), asArray)
		for k, f := range s.Fields {
			line(6, f, k < len(s.Fields)-1)
		}
		buf.WriteString("    ]}")
		if i < len(names)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("  }\n}\n")
	return buf.Bytes()
}

// parseRecord reads a record that path holds.
func parseRecord(path string, data []byte) (*record, error) {
	var r record
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: not a queuey-gen payload schema record: %v; restore it from version control, or delete it to record the jobs as they are now", path, err)
	}
	if r.Format != recordFormat {
		return nil, fmt.Errorf("%s: queuey_schema %d, want %d: a record queuey-gen does not read; delete it to record the jobs as they are now", path, r.Format, recordFormat)
	}
	if r.Types == nil {
		r.Types = recordStructs{}
	}
	for name, s := range r.Types {
		if s == nil {
			return nil, fmt.Errorf("%s: type %s has no layout", path, name)
		}
	}
	return &r, nil
}

// isRecord reports whether data looks like a record queuey-gen wrote: a
// file to replace without asking.
func isRecord(data []byte) bool {
	return bytes.HasPrefix(data, []byte("{\n  \"queuey_schema\": "))
}
