package docs_test

import (
	"strings"
	"testing"
)

// TestConvention checks how blocks are read and composed, on markdown of
// its own: a block with no way to compile is an error, and a fragment gets
// its imports, its uses and positions of the markdown file.
func TestConvention(t *testing.T) {
	const md = "# doc\n" +
		"\n" +
		"```go\n" +
		"x := 1\n" +
		"```\n" +
		"\n" +
		"<!-- compile: func(ctx context.Context) -->\n" +
		"```go\n" +
		"id, err := emails.EnqueueSendEmail(ctx, nil, emails.SendEmail{})\n" +
		"```\n" +
		"\n" +
		"here `jobs/jobs.go`:\n" +
		"\n" +
		"```go\n" +
		"package jobs\n" +
		"```\n" +
		"\n" +
		"```sh\n" +
		"go run .\n" +
		"```\n"
	blocks, err := parseBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 4 {
		t.Fatalf("%d blocks, want 4", len(blocks))
	}

	if _, err := goFileOf("doc.md", blocks[0]); err == nil || !strings.Contains(err.Error(), "doc.md:3: a go block that is neither") {
		t.Errorf("a fragment without a compile comment: error %v, want one naming doc.md:3", err)
	}

	f, err := goFileOf("doc.md", blocks[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`context "context"`,
		`emails "github.com/queuey/queuey/examples/emails/emails"`,
		"func _(ctx context.Context) {\n//line doc.md:9:1\n",
		"emails.SendEmail{}); _ = id; _ = err\n}",
	} {
		if !strings.Contains(f.src, want) {
			t.Errorf("fragment composed as\n%s\nwant it to hold %q", f.src, want)
		}
	}

	f, err = goFileOf("doc.md", blocks[2])
	if err != nil {
		t.Fatal(err)
	}
	if f.path != "jobs/jobs.go" || !strings.HasPrefix(f.src, "//line doc.md:15:1\npackage jobs\n") {
		t.Errorf("whole file at %s:\n%s\nwant jobs/jobs.go, from doc.md:15", f.path, f.src)
	}
}
