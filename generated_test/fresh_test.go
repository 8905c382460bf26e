package generatedtest

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
	"github.com/queuey/queuey/internal/testenv/tempmod"
)

// TestCommittedOutputsFresh checks that the committed queuey_gen.go and
// queuey_schema.json files of this repository are what the generator
// writes now.
func TestCommittedOutputsFresh(t *testing.T) {
	root := tempmod.Root(t)
	pkgs, err := generator.Load(generator.LoadConfig{Dir: root, Patterns: []string{"./generated_test/roundtrip", "./examples/emails/emails"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := generator.Generate(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Errorf("Generate returned %d files, want 2", len(files))
	}
	records, notes, err := generator.Records(pkgs, os.ReadFile, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 || len(notes) > 0 {
		t.Errorf("Records returned %d records, want 2, and notes %q, want none", len(records), notes)
	}
	maps.Copy(files, records)
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("read committed output: %v", err)
			continue
		}
		if !bytes.Equal(got, want) {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s is stale: run go generate ./... and commit it", rel)
		}
	}
}
