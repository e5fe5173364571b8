// Package viewer writes one self-contained HTML page that shows a tape: its threads as
// lanes, every step on a timeline to scale, each step's messages, tool calls and results on
// demand, and, beside a replay, the differences compare.Compare found.
//
// The page's code and styles are embedded in the binary (go:embed) and the tape's data is
// in the file, compressed: the page needs no server and no network. Write streams the tape
// step by step, so a large tape is never held decoded; the page decompresses a step's
// detail only when it is shown, and builds DOM only for what is on screen.
//
// Tape text reaches the page as data, never as markup: the page sets textContent only, and
// a Content-Security-Policy lets no script run but its own.
package viewer
