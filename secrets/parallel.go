package secrets

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tapebox/tapebox/internal/jsonlex"
)

// A tape is scanned in parts on every core: splitJSON cuts the document at member and
// element boundaries into parts of about partSize bytes (the steps of a thread, the
// members of a large step), each part is walked on its own (walkPart) with the pointers
// it has in the whole document, and the findings are put back in document order before
// the secrets are numbered. The parts share the memo of the strings already scanned, so a
// conversation repeated in every request is still scanned once. A document smaller than
// splitMin is walked whole.
const (
	partSize = 512 << 10
	splitMin = 2 * partSize
	// splitDepth bounds how deep splitJSON goes into the document: a tape's steps are at
	// depth 4 (/threads/N/steps/M), a step's members at 5.
	splitDepth = 6
)

// partBytes and splitBytes are partSize and splitMin, smaller in tests.
var partBytes, splitBytes = partSize, splitMin

// part is a piece of a JSON document that can be walked on its own.
type part struct {
	// stack is the frames of the containers that hold the part, outermost first; empty for
	// the whole document. The last is the container whose members or elements the part
	// is a run of (for an array, with the index of the first).
	stack []frame
	// start and end are the offsets in the document of the part's first member (its name)
	// or element and just past its last value.
	start, end int
	// keyOnly is a part that is only a member name (the last frame's key): the name of a
	// member whose value is split into parts of its own.
	keyOnly bool
}

// splitJSON cuts the JSON document in data into parts of about size bytes, in document
// order, in one pass over it, that walkPart walks as walkJSON walks the whole: every
// string visited once, in the same order, with the same pointers. It looks at the
// structure only (as jsonlex.SkipTrusted does), so on input that is not valid JSON the
// parts may not line up: walkPart then fails with errPartMismatch, or with the syntax
// error. ok is false when the document is not an object or an array, or its structure
// cannot be followed.
func splitJSON(data []byte, size int) (parts []part, ok bool) {
	i := jsonlex.Space(data, 0)
	if i >= len(data) || (data[i] != '{' && data[i] != '[') {
		return nil, false
	}
	sp := &splitter{data: data, size: size}
	if _, ok := sp.container(i, nil); !ok {
		return nil, false
	}
	return sp.parts, true
}

type splitter struct {
	data  []byte
	size  int
	parts []part
}

// container splits the members or elements of the container that opens at data[open],
// held by the containers of stack, appending its parts to sp.parts, and returns the
// offset past its end. A member or element larger than sp.size that is a container
// (not deeper than splitDepth) is split in turn; the others are joined in runs.
func (sp *splitter) container(open int, stack []frame) (int, bool) {
	data := sp.data
	array := data[open] == '['
	closing := byte('}')
	if array {
		closing = ']'
	}
	i := jsonlex.Space(data, open+1)
	if i < len(data) && data[i] == closing {
		return i + 1, true
	}
	run := part{start: -1}
	flush := func() {
		if run.start >= 0 {
			sp.parts = append(sp.parts, run)
			run = part{start: -1}
		}
	}
	for index := 0; ; index++ {
		if i >= len(data) {
			return i, false
		}
		first := i // the member's name, or the element
		fr := frame{array: array, index: index}
		if !array {
			if data[i] != '"' {
				return i, false
			}
			end, f, err := jsonlex.String(data, i)
			if err != nil {
				return i, false
			}
			body := data[i+1 : end-1]
			if f.Plain(body) {
				fr.key = unsafe.String(unsafe.SliceData(body), len(body))
			} else {
				fr.key = string(jsonlex.Unquote(nil, body))
			}
			i = jsonlex.Space(data, end)
			if i >= len(data) || data[i] != ':' {
				return i, false
			}
			i = jsonlex.Space(data, i+1)
		}
		if i >= len(data) {
			return i, false
		}
		var end int
		split := false
		if c := data[i]; (c == '{' || c == '[') && len(stack) < splitDepth {
			// Split on the way, in the one pass over the document; undone when the
			// value turns out small enough to join the run.
			mark := len(sp.parts)
			inner := append(stack[:len(stack):len(stack)], fr)
			e, ok := sp.container(i, inner)
			if !ok {
				return e, false
			}
			end = e
			if end-first > sp.size {
				var lead []part
				if run.start >= 0 {
					lead = append(lead, run)
					run = part{start: -1}
				}
				if !array {
					lead = append(lead, part{stack: inner, keyOnly: true})
				}
				sp.parts = slices.Insert(sp.parts, mark, lead...)
				split = true
			} else {
				sp.parts = sp.parts[:mark]
			}
		} else {
			var ok bool
			if end, ok = jsonlex.SkipTrusted(data, i); !ok {
				return end, false
			}
		}
		if !split {
			if run.start < 0 {
				run = part{stack: append(stack[:len(stack):len(stack)], frame{array: array, index: index}), start: first}
			}
			run.end = end
			if run.end-run.start >= sp.size {
				flush()
			}
		}
		i = jsonlex.Space(data, end)
		if i >= len(data) {
			return i, false
		}
		switch data[i] {
		case ',':
			i = jsonlex.Space(data, i+1)
		case closing:
			flush()
			return i + 1, true
		default:
			return i, false
		}
	}
}

// workers bounds the goroutines that scan at once to GOMAXPROCS, over the files of
// ScanFiles and the parts of each: a file's scan holds one token and takes the free ones
// for helpers, so that one large tape uses every core once the others are done.
type workers struct{ tokens chan struct{} }

func newWorkers() *workers {
	return &workers{tokens: make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))}
}

func (wk *workers) acquire() { wk.tokens <- struct{}{} }
func (wk *workers) release() { <-wk.tokens }

func (wk *workers) tryAcquire() bool {
	select {
	case wk.tokens <- struct{}{}:
		return true
	default:
		return false
	}
}

// idle reports whether a token is free now.
func (wk *workers) idle() bool { return len(wk.tokens) < cap(wk.tokens) }

// each calls fn(0) … fn(n-1), on the calling goroutine and on helpers started while
// tokens are free (each holding one), and returns when every call has returned.
func (wk *workers) each(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	loop := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(i)
		}
	}
	for {
		i := int(next.Add(1) - 1)
		if i >= n {
			break
		}
		for i+1 < n && wk.tryAcquire() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer wk.release()
				loop()
			}()
		}
		fn(i)
	}
	wg.Wait()
}

// spawn runs fn on a helper goroutine holding a token when one is free, and otherwise
// on the calling goroutine; wg counts the helpers.
func (wk *workers) spawn(wg *sync.WaitGroup, fn func()) {
	if wk.tryAcquire() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wk.release()
			fn()
		}()
		return
	}
	fn()
}
