// Package dashboard is queuey's web dashboard: a queues overview with live
// charts of depth and throughput, one page per queue with its charts,
// configuration, hold queues and dead letters, one page per dead letter,
// and the actions pause and resume a queue, re-drive (one, selected, all,
// by reason and kind) and purge.
//
// It is a plain net/http handler over an Admin, the few operations the
// pages need. Templates, script and style are embedded: the pages need no
// network and no build step.
//
// # Safety
//
//   - Every state change is a POST that passes a confirmation page first;
//     GET never changes anything.
//   - A POST must carry the form token of this server (a random value made
//     at start) and must not come from another origin
//     (net/http.CrossOriginProtection).
//   - When the server is bound to loopback, requests must name a loopback
//     host, so a page of another site cannot reach it by DNS rebinding.
//   - With Options.ReadOnly the action buttons are not shown and every POST
//     is refused with 403.
//   - Templates escape everything they print: a payload or reason holding
//     markup shows as text. Pages are served with a Content-Security-Policy
//     that allows only the dashboard's own script and style.
//   - The broker is shown by a URL whose password is replaced (see Redact).
//
// # Scale
//
// From New until Close the server asks the Admin for every queue's stats
// (and the CountReader for its counters) every 2 s, and keeps 300 samples
// of each queue for the charts: the last ten minutes, whether or not a page
// was open. Each view or refresh of the overview asks once more, shared by
// the pages that ask at the same time; dead letters are read one page at a
// time. What a page costs beyond that is the Admin's:
// see its documentation for how deep a page can go.
package dashboard
