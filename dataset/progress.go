package dataset

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// IsTerminal reports whether w is a terminal (a character device), where a progress bar
// belongs.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// progress draws a one-line progress bar on a terminal, at most 5 times a second.
type progress struct {
	w     io.Writer
	verb  string
	items int
	total int64

	mu    sync.Mutex
	done  int
	bytes int64
	start time.Time
	last  time.Time
	ended bool
}

func newProgress(w io.Writer, verb string, items int, total int64) *progress {
	return &progress{w: w, verb: verb, items: items, total: total, start: time.Now()}
}

// add counts one item of n bytes.
func (p *progress) add(n int64) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.bytes += n
	if now := time.Now(); now.Sub(p.last) >= 200*time.Millisecond || p.done == p.items {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	secs := time.Since(p.start).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(p.bytes) / 1e6 / secs
	}
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%s %d tapes  %s  %.0f MB/s ", p.verb, p.done, humanBytes(p.bytes), rate)
		return
	}
	fill := min(width, int(float64(p.bytes)/float64(p.total)*width))
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d tapes  %s/%s  %.0f MB/s ", p.verb,
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), p.done, p.items,
		humanBytes(p.bytes), humanBytes(p.total), rate)
}

// stop ends the line; it may be called more than once.
func (p *progress) stop() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended && p.done > 0 {
		p.draw()
		fmt.Fprintln(p.w)
	}
	p.ended = true
}

// humanBytes formats a size with a binary unit: 1.5 GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
