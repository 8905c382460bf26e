package hooks_test

import (
	"testing"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// TestOnlyKOpens: runtime.Hooks lends its hooks for K and panics for the
// zero Key, the one code outside this module can make by inference.
func TestOnlyKOpens(t *testing.T) {
	t.Parallel()
	if h := runtime.Hooks(hooks.K); h.Run == nil {
		t.Fatal("Hooks(K) lent no Run hook")
	}
	defer func() {
		if recover() == nil {
			t.Error("Hooks(Key{}) did not panic")
		}
	}()
	var zero hooks.Key
	runtime.Hooks(zero)
}
