// Package generator is queuey-gen: it loads Go packages, finds their
// //queuey:queue annotated struct types (package annotations) and writes a
// queuey_gen.go beside them with typed Enqueue and Handle functions.
//
// The work is in three steps, so that the middle one can be tested in
// process: Load type-checks the packages, Generate (and Records) turns
// them into file contents without touching the disk, and Write puts the
// files in place atomically. Run is the command line around them.
//
// # Field types
//
// A job travels as msgpack (github.com/vmihailenco/msgpack/v5), so every
// field of a job, and of the structs it holds, must survive an
// encode and a decode unchanged. Generate refuses, naming the field path
// and why:
//
//   - chan, func and unsafe.Pointer: there is no value to encode;
//   - complex64, complex128 and uintptr: msgpack/v5 has no encoder for them;
//   - interface types, including any and error: a value decodes into
//     generic types (map[string]any, int8, ...), not the one enqueued;
//   - a type with an encoding method (EncodeMsgpack, MarshalMsgpack,
//     MarshalBinary, MarshalText) but not the matching decoding one;
//   - an embedded unexported non-struct type, or an embedded pointer to an
//     unexported struct, which msgpack cannot set when decoding;
//   - an unexported field, which msgpack skips: it would arrive as its zero
//     value. Tag it msgpack:"-" to leave it behind on purpose;
//   - fields whose msgpack keys collide. msgpack encodes every field under
//     its key but decodes a key into the last field that claims it, so the
//     other would arrive as its zero value: two msgpack tags naming one
//     key, a tag naming another field's name, an alias naming another
//     field's key, and an embedded struct's field (msgpack inlines the
//     fields of embedded structs) sharing a key with the struct around
//     it, or with its name. Declared before the embedded struct, the outer
//     field keeps msgpack from inlining it at all, so it goes as a nested
//     map until a reorder drops the inner field: refused too. Tag such an
//     embedded field msgpack:",noinline" to nest it on purpose;
//   - embedded fields msgpack cannot lay out: msgpack:",inline" on one
//     that is not a struct (msgpack panics), and a struct that embeds a
//     struct it is part of (msgpack's recursion overflows the stack).
//
// Keys follow msgpack/v5's own rules (package internal/msgpack/mpfields): the
// name in the msgpack tag or the field's name; json tags are not read.
// A struct encoded as an array (a _msgpack field tagged as_array) decodes
// its fields by position, so keys repeated there lose nothing.
//
// Everything else is carried: booleans, numbers, strings, []byte, arrays,
// slices, maps, pointers, structs of any package, embedded structs, and
// types with matching encoding methods such as time.Time. Fields tagged
// msgpack:"-" and blank (_) fields are not carried and not checked.
//
// A time.Time keeps its instant to the nanosecond but not its location:
// msgpack/v5 decodes it in the handling process's time.Local (the zero
// time in UTC), and drops the monotonic clock reading.
//
// # Limit keys
//
// limit_key=F makes a worker run one job at a time per value of field F,
// which it reads from the decoded job. Generate refuses, at the limit_key=
// value, an F that is not a field declared in the job struct itself (a
// field of an embedded struct is not: the embedded pointer may be nil),
// a field tagged msgpack:"-" (every job would arrive with the zero value),
// and a field whose type is not of a string, signed or unsigned integer or
// bool kind (a named type of one is fine). The message names the field,
// the struct and the fields that would do.
//
// # Payload records
//
// Records writes queuey_schema.json beside each queuey_gen.go: each job's
// queue arguments and kind, and every struct its payload holds as msgpack
// carries it (record.go). Global limits (limit=, rate=, limit_key=) are
// not queue arguments and are not recorded: a change to them is no change
// to the record. A run compares the structs with the record
// (compat.go): what jobs in flight survive is recorded and noted, what
// they would not survive is refused, field by field, at file:line:col,
// unless accepted. docs/upgrades.md lists the verdicts; the tests of this
// package hold each against a real encode, publish and handle.
//
// # Import names
//
// The generated file imports context, time and
// github.com/queuey/queuey/runtime under their own names. A package that
// declares one of those names at package scope (var runtime = 1, func
// time()) would not compile with such an import, so there the file imports
// the package as queuey<name> instead (queueyruntime, queueytime), or
// queuey<name>2 and on if that is declared too.
package generator
