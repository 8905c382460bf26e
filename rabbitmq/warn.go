package rabbitmq

import (
	"log/slog"
	"sync"
)

// warnings logs what a backend warns of once per key: a queue kept as it
// is, a setting the broker would not honour. The components share one.
type warnings struct {
	log  *slog.Logger
	seen sync.Map // keys of warnings given
}

// first says whether key is seen for the first time, and marks it seen.
func (w *warnings) first(key string) bool {
	_, seen := w.seen.LoadOrStore(key, struct{}{})
	return !seen
}

// once logs msg at warning level the first time key is seen.
func (w *warnings) once(key, msg string, args ...any) {
	if w.first(key) {
		w.log.Warn(msg, args...)
	}
}
