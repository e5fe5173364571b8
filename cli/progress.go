package cli

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tapebox/tapebox/controller"
	"github.com/tapebox/tapebox/dataset"
)

// replayProgress draws one line on a terminal: steps started of the total, the thread and
// the tool at work, at most 10 times a second. It is off (nil) when w is not a terminal.
type replayProgress struct {
	w    io.Writer
	mu   sync.Mutex
	last time.Time
	drew bool
}

func newReplayProgress(w io.Writer, quiet bool) *replayProgress {
	if quiet || !dataset.IsTerminal(w) {
		return nil
	}
	return &replayProgress{w: w}
}

func (p *replayProgress) update(pr controller.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || pr.Done == pr.Total {
		p.last = now
		what := "model call"
		if pr.Tool != "" {
			what = pr.Tool
		}
		fmt.Fprintf(p.w, "\r\x1b[Kreplay: step %d/%d, thread %s: %s", pr.Done, pr.Total, short(pr.Thread, 24), what)
		p.drew = true
	}
}

// done clears the line, so that what follows starts on a clean one.
func (p *replayProgress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drew {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
