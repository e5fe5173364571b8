package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/internal/term"
)

// statusLine is one line redrawn in place on a terminal, at most once per every (a final
// state is drawn at once), and cleared before anything else is written. It is off (nil)
// when w is not a terminal; every method of a nil statusLine does nothing.
type statusLine struct {
	w     io.Writer
	every time.Duration
	mu    sync.Mutex
	last  time.Time
	drew  bool
}

func newStatusLine(w io.Writer, quiet bool, every time.Duration) *statusLine {
	if quiet || !term.IsTerminal(w) {
		return nil
	}
	// Its own control sequences go to the terminal itself; the line's text (a thread id, a
	// tool name: the tape's) through term.Printable.
	return &statusLine{w: term.Raw(w), every: every}
}

// draw shows line unless the last one is too recent and final is false.
func (l *statusLine) draw(line string, final bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); final || now.Sub(l.last) >= l.every {
		l.last = now
		fmt.Fprintf(l.w, "\r\x1b[K%s", term.Printable(line))
		l.drew = true
	}
}

// clear removes the line, so that what follows starts on a clean one.
func (l *statusLine) clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drew {
		fmt.Fprint(l.w, "\r\x1b[K")
		l.drew = false
	}
}

// replayLine is the progress of one replay: steps started of the total, the thread and
// the tool at work.
func replayLine(pr controller.Progress) string {
	what := "model call"
	if pr.Tool != "" {
		what = pr.Tool
	}
	return fmt.Sprintf("replay: step %d/%d, thread %s: %s", pr.Done, pr.Total, short(pr.Thread, 24), what)
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
