package generator

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"go/types"
	"math"
	"slices"

	"golang.org/x/tools/go/packages"

	"github.com/queuey/queuey/internal/msgpack/mpfields"
	"github.com/queuey/queuey/runtime"
)

// schemas is what queuey-gen -schema prints: for every job of the
// packages, what a producer in another language needs to enqueue it in
// the wire format (docs/wire-format.md).
type schemas struct {
	// Jobs are the jobs, by queue name.
	Jobs []jobSchema `json:"jobs"`
}

// jobSchema describes one job: its queue, as its annotation resolves it,
// and a JSON Schema of its payload.
type jobSchema struct {
	Queue       string `json:"queue"`
	Kind        string `json:"kind"`
	Package     string `json:"package"`
	MaxAttempts int    `json:"max_attempts"`
	// MaxPriority is the highest priority an enqueue may give; 0 for a
	// queue declared without priorities.
	MaxPriority int    `json:"max_priority"`
	QueueType   string `json:"queue_type"`
	// Delay is the queue's delay mode: the annotation's delay, or a
	// backend's default mode for its queue type unless it is configured
	// otherwise (rabbitmq.Options.Delay), "queue" for classic and "ladder"
	// for quorum, with DelayDefault set.
	Delay         string `json:"delay"`
	DelayDefault  bool   `json:"delay_default,omitempty"`
	DelayExchange string `json:"delay_exchange,omitempty"`
	// Payload is a JSON Schema (2020-12) of the payload as msgpack carries
	// it: a map keyed by the struct's field names or msgpack tags. Keys
	// are optional: a missing one leaves its field's zero value.
	Payload map[string]any `json:"payload"`
}

// jsonSchemaDialect is the JSON Schema version of the payload schemas.
const jsonSchemaDialect = "https://json-schema.org/draft/2020-12/schema"

// generateSchemas returns the schemas of the jobs of pkgs, as JSON. It
// checks the jobs as Generate does, and writes nothing.
func generateSchemas(pkgs []*packages.Package) ([]byte, error) {
	pkgs = slices.Clone(pkgs)
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return cmp.Compare(a.PkgPath, b.PkgPath) })
	out := schemas{Jobs: []jobSchema{}}
	var errs []error
	for _, p := range pkgs {
		if outputFile(p) == "" {
			continue
		}
		jobs, err := jobsOf(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, j := range jobs {
			obj := p.Types.Scope().Lookup(j.Type).(*types.TypeName)
			q := j.Queue
			out.Jobs = append(out.Jobs, jobSchema{
				Queue: q.Name, Kind: q.Kind, Package: p.PkgPath,
				MaxAttempts: q.MaxAttempts, MaxPriority: max(q.MaxPriority, 0),
				QueueType: string(q.QueueType), Delay: string(cmp.Or(q.Delay, runtime.DefaultDelay(q.QueueType))), DelayDefault: q.Delay == "", DelayExchange: q.DelayExchange,
				Payload: payloadSchema(obj.Type(), q.Kind),
			})
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out.Jobs, func(a, b jobSchema) int { return cmp.Compare(a.Queue, b.Queue) })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// schemaBuilder makes the schema of one job's payload; named struct types
// other than the job go into $defs, so that recursive types end.
type schemaBuilder struct {
	defs  map[string]any
	owner map[string]types.Type // the type of each name in defs
	root  types.Type
}

func payloadSchema(t types.Type, kind string) map[string]any {
	b := &schemaBuilder{defs: map[string]any{}, owner: map[string]types.Type{}, root: t}
	s := b.structSchema(t)
	s["$schema"] = jsonSchemaDialect
	s["title"] = kind
	if len(b.defs) > 0 {
		s["$defs"] = b.defs
	}
	return s
}

// of returns the schema of a value of type t as msgpack/v5 carries it.
func (b *schemaBuilder) of(t types.Type) map[string]any {
	if named, ok := types.Unalias(t).(*types.Named); ok {
		if obj := named.Obj(); obj.Pkg() != nil && obj.Pkg().Path() == "time" {
			switch obj.Name() {
			case "Time":
				return map[string]any{"type": "string", "format": "date-time", "description": "msgpack timestamp extension (type -1)"}
			case "Duration":
				return map[string]any{"type": "integer", "minimum": math.MinInt64, "maximum": math.MaxInt64, "description": "nanoseconds"}
			}
		}
	}
	if _, isIface := t.Underlying().(*types.Interface); !isIface {
		if enc := codecMethod(t, encodeMethods); enc >= 0 {
			switch encodeMethods[enc] {
			case "MarshalText":
				return map[string]any{"type": "string", "description": "the value's MarshalText"}
			case "MarshalBinary":
				return map[string]any{"type": "string", "contentEncoding": "base64", "description": "msgpack bin: the value's MarshalBinary"}
			}
			return map[string]any{"description": "encoded by the value's " + encodeMethods[enc]}
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		return basicSchema(u)
	case *types.Pointer:
		return nullable(b.of(u.Elem()))
	case *types.Slice:
		if e, ok := u.Elem().Underlying().(*types.Basic); ok && e.Kind() == types.Byte {
			return map[string]any{"type": []string{"string", "null"}, "contentEncoding": "base64", "description": "msgpack bin"}
		}
		return map[string]any{"type": []string{"array", "null"}, "items": b.of(u.Elem())}
	case *types.Array:
		if e, ok := u.Elem().Underlying().(*types.Basic); ok && e.Kind() == types.Byte {
			return map[string]any{"type": "string", "contentEncoding": "base64", "description": fmt.Sprintf("msgpack bin of %d bytes", u.Len())}
		}
		return map[string]any{"type": "array", "items": b.of(u.Elem()), "minItems": u.Len(), "maxItems": u.Len()}
	case *types.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": b.of(u.Elem()), "propertyNames": b.of(u.Key())}
	case *types.Struct:
		named, ok := types.Unalias(t).(*types.Named)
		if !ok {
			return b.structSchema(t)
		}
		if types.Identical(named, b.root) {
			return map[string]any{"$ref": "#"}
		}
		name := b.defName(named)
		if _, done := b.defs[name]; !done {
			b.owner[name] = named
			b.defs[name] = true // placeholder: a recursive reference finds it
			b.defs[name] = b.structSchema(named)
		}
		return map[string]any{"$ref": "#/$defs/" + jsonPointer(name)}
	}
	return map[string]any{}
}

// defName names t in $defs as kinds are named, package.Type, or by its
// package's path when two packages of one name have a type of that name.
func (b *schemaBuilder) defName(t *types.Named) string {
	name := types.TypeString(t, func(p *types.Package) string { return p.Name() })
	if other, ok := b.owner[name]; ok && !types.Identical(other, t) {
		return types.TypeString(t, nil)
	}
	return name
}

// structSchema is the schema of struct type t: an object of the fields
// msgpack carries, or an array of them for a struct encoded as one.
func (b *schemaBuilder) structSchema(t types.Type) map[string]any {
	l := mpfields.Of(goTypes{}, t)
	if l.AsArray {
		items := make([]any, len(l.List))
		for i, e := range l.List {
			items[i] = b.of(e.Type)
		}
		return map[string]any{"type": "array", "prefixItems": items}
	}
	props := map[string]any{}
	for _, e := range l.List {
		props[e.Key] = b.of(e.Type)
	}
	return map[string]any{"type": "object", "properties": props}
}

func basicSchema(u *types.Basic) map[string]any {
	integer := func(lo, hi any) map[string]any {
		return map[string]any{"type": "integer", "minimum": lo, "maximum": hi}
	}
	switch u.Kind() {
	case types.Bool:
		return map[string]any{"type": "boolean"}
	case types.String:
		return map[string]any{"type": "string"}
	case types.Int8:
		return integer(math.MinInt8, math.MaxInt8)
	case types.Int16:
		return integer(math.MinInt16, math.MaxInt16)
	case types.Int32:
		return integer(math.MinInt32, math.MaxInt32)
	case types.Int, types.Int64:
		return integer(math.MinInt64, math.MaxInt64)
	case types.Uint8:
		return integer(0, math.MaxUint8)
	case types.Uint16:
		return integer(0, math.MaxUint16)
	case types.Uint32:
		return integer(0, math.MaxUint32)
	case types.Uint, types.Uint64:
		return integer(0, uint64(math.MaxUint64))
	case types.Float32, types.Float64:
		return map[string]any{"type": "number"}
	}
	return map[string]any{}
}

// nullable is s, or null (a nil pointer).
func nullable(s map[string]any) map[string]any {
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// jsonPointer escapes s as a JSON Pointer reference token.
func jsonPointer(s string) string {
	var buf bytes.Buffer
	for _, r := range s {
		switch r {
		case '~':
			buf.WriteString("~0")
		case '/':
			buf.WriteString("~1")
		default:
			buf.WriteRune(r)
		}
	}
	return buf.String()
}
