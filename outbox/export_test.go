package outbox

// SetHooks sets functions r calls each time it starts listening for
// notifications, and each time it has found no row left and waits.
func SetHooks(r *Relay, listening, idle func()) { r.listening, r.idle = listening, idle }

// Schema is the text Migrate applies.
var Schema = schema
