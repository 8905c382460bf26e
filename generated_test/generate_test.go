package generatedtest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuey/queuey/cmd/queuey-gen/generator"
	"github.com/queuey/queuey/internal/testenv/tempmod"
)

// TestDuplicateQueueAcrossPackages checks that a queue name given to jobs
// of two packages generated together is refused at the second name= value.
func TestDuplicateQueueAcrossPackages(t *testing.T) {
	mod, env := tempmod.New(t, tempmod.Root(t), "example.com/golden")
	tempmod.WriteFile(t, filepath.Join(mod, "billing", "jobs.go"), []byte("package billing\n\n//queuey:queue name=shared\ntype Charge struct{ ID string }\n"))
	tempmod.WriteFile(t, filepath.Join(mod, "shop", "jobs.go"), []byte("package shop\n\n//queuey:queue max_attempts=2 name=shared\ntype ShipOrder struct{ ID string }\n"))
	pkgs, err := generator.Load(generator.LoadConfig{Dir: mod, Env: env, Patterns: []string{"./billing", "./shop"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = generator.Generate(pkgs)
	if err == nil {
		t.Fatal("Generate accepted one queue name for two jobs")
	}
	got := strings.ReplaceAll(err.Error(), mod+string(filepath.Separator), "")
	want := "shop/jobs.go:3:36: name=shared of ShipOrder is already the queue of Charge (billing/jobs.go:3:21); give one of them another name="
	if got != want {
		t.Errorf("error:\n got %s\nwant %s", got, want)
	}
}
