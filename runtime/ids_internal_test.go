package runtime

import (
	"testing"

	"github.com/google/uuid"
)

// TestNewIDs checks that a batch's IDs are version 7 UUIDs in the text
// form uuid.Parse reads back, all different, and in the order they were
// made, as newID's are.
func TestNewIDs(t *testing.T) {
	t.Parallel()
	ids, err := newIDs(500)
	if err != nil {
		t.Fatal(err)
	}
	one, err := newID()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, id := range append(ids, one) {
		u, err := uuid.Parse(id)
		switch {
		case err != nil:
			t.Fatalf("id %d %q: %v", i, id, err)
		case u.Version() != 7:
			t.Errorf("id %d %q: version %d, want 7", i, id, u.Version())
		case u.String() != id:
			t.Errorf("id %d %q: uuid.String gives %q", i, id, u.String())
		case seen[id]:
			t.Errorf("id %d %q: made twice", i, id)
		case i > 0 && id <= ids[i-1]:
			t.Errorf("id %d %q sorts before the one made before it, %q", i, id, ids[i-1])
		}
		seen[id] = true
	}
}
