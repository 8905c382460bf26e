// Package generatedtest holds the tests of queuey-gen's output: golden
// cases in testdata/*.txtar, each input files plus the expected
// queuey_gen.go or the expected error, and behaviour tests in roundtrip
// that run generated code on the in-memory backend.
//
// Run go test ./generated_test/ -update to rewrite the golden files from
// what the generator produces now; review the diff before committing it.
package generatedtest
