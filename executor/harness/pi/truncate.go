package pi

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Pi's output limits (core/tools/truncate.js): whichever of 2000 lines or 50 KB comes first.
const (
	maxLines = 2000
	maxBytes = 50 * 1024
)

// truncation is what truncateHead and truncateTail did.
type truncation struct {
	content          string
	truncated        bool
	byLines          bool // truncatedBy "lines" (else "bytes")
	totalLines       int
	outputLines      int
	outputBytes      int
	lastLinePartial  bool
	firstLineTooLong bool
}

// measure splits content into lines and says whether it is over either limit.
func measure(content string, lines, bytes int) ([]string, truncation) {
	all := strings.Split(content, "\n")
	t := truncation{content: content, totalLines: len(all), outputLines: len(all), outputBytes: len(content)}
	t.truncated = len(all) > lines || len(content) > bytes
	return all, t
}

// truncateHead keeps the first whole lines within lines and bytes (truncateHead).
func truncateHead(content string, lines, bytes int) truncation {
	all, t := measure(content, lines, bytes)
	if !t.truncated {
		return t
	}
	if len(all[0]) > bytes {
		t.content, t.outputLines, t.outputBytes, t.firstLineTooLong = "", 0, 0, true
		return t
	}
	n, size := 0, 0
	t.byLines = true
	for i := 0; i < len(all) && i < lines; i++ {
		l := len(all[i])
		if i > 0 {
			l++
		}
		if size+l > bytes {
			t.byLines = false
			break
		}
		n++
		size += l
	}
	if n >= lines && size <= bytes {
		t.byLines = true
	}
	t.content = strings.Join(all[:n], "\n")
	t.outputLines, t.outputBytes = n, len(t.content)
	return t
}

// truncateTail keeps the last whole lines within lines and bytes; a last line longer than
// bytes alone is cut to its end (truncateTail).
func truncateTail(content string, lines, bytes int) truncation {
	all, t := measure(content, lines, bytes)
	if !t.truncated {
		return t
	}
	t.byLines = true
	start, size := len(all), 0
	for i := len(all) - 1; i >= 0 && len(all)-start < lines; i-- {
		l := len(all[i])
		if start < len(all) {
			l++
		}
		if size+l > bytes {
			t.byLines = false
			if start == len(all) {
				cut := len(all[i]) - bytes
				for cut < len(all[i]) && !utf8.RuneStart(all[i][cut]) {
					cut++
				}
				t.content = all[i][cut:]
				t.outputLines, t.outputBytes, t.lastLinePartial = 1, len(t.content), true
				return t
			}
			break
		}
		start = i
		size += l
	}
	if len(all)-start >= lines && size <= bytes {
		t.byLines = true
	}
	t.content = strings.Join(all[start:], "\n")
	t.outputLines, t.outputBytes = len(all)-start, len(t.content)
	return t
}

// formatSize words a size as Pi does: "512B", "50.0KB", "1.2MB" (JavaScript's toFixed(1),
// which rounds a half up).
func formatSize(n int) string {
	switch {
	case n < 1024:
		return strconv.Itoa(n) + "B"
	case n < 1024*1024:
		return tenths(n, 1024) + "KB"
	}
	return tenths(n, 1024*1024) + "MB"
}

// tenths is n/unit to one decimal, a half rounded up.
func tenths(n, unit int) string {
	q, r := n*10/unit, n*10%unit
	if 2*r >= unit {
		q++
	}
	return strconv.Itoa(q/10) + "." + strconv.Itoa(q%10)
}
