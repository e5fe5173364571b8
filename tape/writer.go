package tape

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Writer persists a tape that grows one model call at a time: a recording or a replay.
// After every Sync the file at its path is a complete, valid, canonical tape, and the cost
// of a Sync does not grow with the tape.
//
// How: the canonical encoding of a tape is a concatenation of pieces (the head with the
// meta, each thread's head, each step's request, answer, and tool results with timing, the
// closing brackets), and each piece is encoded once, when it is created or changed. The Writer keeps two slot files beside the tape
// (".NAME.slot-a", ".NAME.slot-b") and alternates between them: a Sync brings the idle slot
// up to date by rewriting it from the first piece that changed since that slot was last
// written (usually the tool results the step before last learned, and the steps after
// them), truncates it, fsyncs it, then publishes it by hard-linking it to a temporary
// name and renaming that over the tape's path. A reader that opens the path gets an inode
// that is complete and that the Writer will not touch until one more Sync has published the
// other slot. PrepareSync makes the next Sync's link ahead of time, so that publishing costs
// one rename, and preallocates the slots' files (on Linux), so that the rename does not
// make ext4 allocate the written blocks first. Where hard links are not available, Sync falls back to rewriting the whole
// file through a temporary file and a rename.
//
// Close (or Finish) removes the slot files; the tape stays at its path.
//
// The Writer owns the tape it was created with: change it only through the Writer's
// methods. Methods are safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	path string
	t    *Tape

	head    piece // {"version":1,"meta":{...},"threads":[
	threads []*threadPieces

	slots   [2]*slot
	next    int     // slot to write on the next Sync
	buf     []byte  // what a Sync writes, reused across Syncs
	pieces  []piece // what a Sync writes, piece by piece, reused across Syncs
	noLinks bool
	noFsync bool
	noAlloc bool // the file system does not preallocate
	closed  bool
	first   bool // no publish yet

	// Digests (WithDigests): metaSum is the meta's hash, tail the piece that closes the
	// tape (with the root digest), rootDirty says the root must be computed again.
	digests   bool
	hs        Hashing
	metaSum   sum
	tail      piece
	rootDirty bool
}

// Option configures a Writer.
type Option func(*Writer)

// WithDigests makes the Writer give every step its link in its thread's chain and the tape
// its root digest (see Digest), computed with hs over the pieces as they are encoded, so
// that no body is held or read again for it; hs.Sign, when set, signs the root. Every
// persisted version verifies. Package tape/seal gives hs.
func WithDigests(hs Hashing) Option { return func(w *Writer) { w.digests, w.hs = true, hs } }

// piece is a part of the tape's encoding, replaced (never changed) when what it encodes
// changes.
type piece struct {
	data []byte
	// big is set instead of data for a piece of dropSize bytes or more.
	big *bigPiece
}

// dropSize is the size from which a piece leaves memory once it is on disk (bigPiece); a
// variable for tests.
var dropSize = 64 << 10

// bigPiece is a large piece: a request, an answer. Once a slot holding it is published,
// its data is dropped; a Sync that writes it again copies it from the slot published last,
// where it stands at at[that slot], file to file. The slot published last holds every
// piece (it was brought up to date before it was published) and is not written until the
// other one is published, so the copy is always there to take.
type bigPiece struct {
	data []byte // nil once dropped
	size int64
	at   [2]int64 // where it starts in each slot; -1 until written there
}

func (p piece) size() int64 {
	if p.big != nil {
		return p.big.size
	}
	return int64(len(p.data))
}

type threadPieces struct {
	head    piece // [","]{"id":...,"parent":...,"steps":[
	steps   []stepPieces
	genesis sum // the link its chain starts from (with digests)
}

// stepPieces are the pieces of a step: [","]{"request": (a fixed piece), then the request,
// then ,"response":...,"tool_calls":..., then ,"tool_results":...,"timing":...}. A change
// re-encodes only its piece, and a Sync rewrites a slot only from the first piece that
// changed: the tool results a step learns from the thread's next request cost their own
// bytes, not the step's.
type stepPieces struct {
	request piece
	answer  piece
	end     piece
	// released says the step's bodies and conversation left memory (Release).
	released bool
	// hash keeps the step's hash states and link (with digests).
	hash *stepHasher
}

type slot struct {
	path string
	f    *os.File
	// ends are the end offsets of the pieces the slot holds, in layout order.
	ends []int64
	// from is the layout position of the first piece changed since the slot was last
	// written (clean when past its last piece).
	from int
	size int64 // the file's length
	// link is a hard link to the slot made ahead of its next publish (by PrepareSync), or "".
	link string
	// alloc is where the blocks preallocated for the slot end.
	alloc int64
}

// preallocChunk is how much a slot's preallocation grows at a time.
const preallocChunk = 1 << 20

// The pieces that are the same wherever they are, from the field table (initStepLayout).
var (
	threadTail    piece // ]} closing a thread's steps and the thread
	tapeTail      piece // ]} closing the threads and the tape, without a digest
	firstStepOpen piece // {"request":
	stepOpen      piece // ,{"request":
)

// initStepLayout derives the Writer's pieces and the digests' member order from the field
// table, and checks what they rely on: a step's request comes first (it is encoded ahead,
// PrepareStep) and its digest last (it is computed from the rest), the tool results
// after the tool calls (they arrive with the thread's next request), and a thread's steps
// and the tape's threads and digest last (they grow). The digests hash a step's members
// sorted by key (JCS), request and response first, so that the hash states after those two
// large values are kept.
func initStepLayout() {
	n := len(stepTable().fields)
	if stepRequest != 0 || stepDig != n-1 || stepResponse >= stepToolResults || stepToolCalls >= stepToolResults ||
		threadSteps != len(threadTable().fields)-1 || tapeThreads != len(tapeTable().fields)-2 || tapeDigest != len(tapeTable().fields)-1 {
		panic("tape: the field table's order does not suit the Writer's pieces")
	}
	threadTail = piece{data: []byte("]}")}
	tapeTail = piece{data: []byte("]}\n")}
	firstStepOpen = piece{data: []byte("{" + stepTable().fields[stepRequest].member)}
	stepOpen = piece{data: append([]byte(","), firstStepOpen.data...)}
	stepMembers = stepMembers[:0]
	for _, f := range stepTable().fields {
		stepMembers = append(stepMembers, []byte(","+f.member))
	}
	stepSorted = stepSorted[:0]
	for i := range stepTable().fields {
		if i != stepDig {
			stepSorted = append(stepSorted, i)
		}
	}
	slices.SortFunc(stepSorted, func(a, b int) int { return strings.Compare(stepTable().fields[a].key, stepTable().fields[b].key) })
	if stepSorted[0] != stepRequest || stepSorted[1] != stepResponse || stepTable().fields[stepDig].key > stepTable().fields[stepRequest].key {
		panic("tape: the digests' member order does not begin with the step's request and response")
	}
}

// Create starts persisting t at path (parent directories are created, an existing regular
// file is replaced; anything else at path is refused: CheckOutput) and writes it once.
func Create(path string, t *Tape, opts ...Option) (*Writer, error) {
	layout()
	if err := CheckOutput(path); err != nil {
		return nil, fmt.Errorf("create tape: %w", err)
	}
	t.normalize()
	w := &Writer{path: path, t: t, first: true, tail: tapeTail}
	for _, o := range opts {
		o(w)
	}
	if !w.digests {
		t.Digest = nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create tape %s: %w", path, err)
	}
	if err := w.encodeHead(); err != nil {
		return nil, err
	}
	for _, th := range t.Threads {
		if err := w.addThreadPieces(th); err != nil {
			return nil, err
		}
	}
	removeStale(path)
	for i, name := range []string{"a", "b"} {
		p := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".slot-"+name)
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			w.closeSlots()
			return nil, fmt.Errorf("create tape %s: %w", path, err)
		}
		w.slots[i] = &slot{path: p, f: f}
	}
	if err := w.Sync(); err != nil {
		w.closeSlots()
		return nil, err
	}
	return w, nil
}

// SetFsync chooses whether Sync makes each step durable (fsync of the file and its
// directory, the default) or only publishes it atomically. Readers never see a torn file
// either way; without fsync a machine crash may lose the last steps.
func (w *Writer) SetFsync(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.noFsync = !on
}

// removeStale removes the slot and publish files a killed Writer left beside path. They must
// go, not be truncated: after a kill the tape itself may be a hard link to a slot file.
func removeStale(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for _, pattern := range []string{"." + base + ".slot-*", "." + base + ".publish-*"} {
		matches, _ := filepath.Glob(filepath.Join(dir, globEscape(pattern)))
		for _, m := range matches {
			os.Remove(m)
		}
	}
}

// globEscape escapes the glob metacharacters of a file name, keeping a trailing "*".
func globEscape(pattern string) string {
	stem, star := strings.CutSuffix(pattern, "*")
	var b strings.Builder
	for _, r := range stem {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	if star {
		b.WriteByte('*')
	}
	return b.String()
}

// Path returns the path the tape is written to.
func (w *Writer) Path() string { return w.path }

// Tape returns the tape being written. Read it only while no other goroutine uses the
// Writer, or after Close.
func (w *Writer) Tape() *Tape { return w.t }

// View calls fn with the tape under the Writer's lock; fn must not change it.
func (w *Writer) View(fn func(*Tape)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(w.t)
}

// changed notes that the pieces from layout position pos on changed (or moved).
func (w *Writer) changed(pos int) {
	for _, s := range w.slots {
		if s != nil && pos < s.from {
			s.from = pos
		}
	}
}

// threadPos is the layout position of thread ti's head: after the tape's head and the
// pieces of the threads before it (head, four per step, tail).
func (w *Writer) threadPos(ti int) int {
	pos := 1
	for _, tp := range w.threads[:ti] {
		pos += 2 + 4*len(tp.steps)
	}
	return pos
}

// stepPos is the layout position of piece k (0 the opening, 1 the request, 2 the answer, 3
// the tool results and timing) of step si of thread ti.
func (w *Writer) stepPos(ti, si, k int) int {
	return w.threadPos(ti) + 1 + 4*si + k
}

func (w *Writer) newPiece(data []byte) piece {
	if len(data) >= dropSize {
		return piece{big: &bigPiece{data: data, size: int64(len(data)), at: [2]int64{-1, -1}}}
	}
	return piece{data: data}
}

func (w *Writer) encodeHead() error {
	e := enc{b: make([]byte, 0, 4<<10), ok: true}
	spans := make([]span, len(tapeTable().fields))
	e.b = append(e.b, '{')
	writeSpans(&e, tapeTable(), w.t, 0, tapeThreads, true, spans)
	if !e.ok {
		_, err := marshalPiece(&w.t.Meta)
		return fmt.Errorf("encode meta: %w", cmp.Or(err, errEncode))
	}
	meta := e.b[spans[tapeMeta].from:spans[tapeMeta].to]
	if w.digests {
		c, err := canonical(meta)
		if err != nil {
			return fmt.Errorf("encode meta: %w", err)
		}
		w.metaSum = w.hs.sum(c)
		w.rootDirty = true
	}
	e.b = append(append(append(e.b, ','), tapeTable().fields[tapeThreads].member...), '[')
	w.head = w.newPiece(e.b)
	w.changed(0)
	return nil
}

// errEncode is the error of a value the field table's encoder refused and encoding/json
// wrote; it is never expected (both refuse the same things).
var errEncode = errors.New("the encoder refused a value encoding/json writes")

// writeSpans is writeMembers that records in spans[i] where the value of member i stands
// in e.b, {0, 0} for a member left out. A value holding U+FFFD is written as Marshal
// writes it (fixReplacement).
func writeSpans[T any](e *enc, o *object[T], v *T, from, to int, first bool, spans []span) {
	for i := from; i < to; i++ {
		spans[i] = span{}
		f := &o.fields[i]
		if f.omit != nil && f.omit(v) {
			continue
		}
		if !first {
			e.b = append(e.b, ',')
		}
		first = false
		e.b = append(e.b, f.member...)
		start := len(e.b)
		f.enc(e, v)
		if bytes.Contains(e.b[start:], escapedReplacement) {
			fixed := unescapeReplacement(e.b[start:])
			e.b = append(e.b[:start], fixed...)
		}
		spans[i] = span{start, len(e.b)}
	}
}

func (w *Writer) encodeThreadHead(i int) ([]byte, error) {
	th := w.t.Threads[i]
	e := enc{ok: true}
	if i > 0 {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '{')
	writeMembers(&e, threadTable(), th, 0, threadSteps, true)
	if !e.ok {
		return nil, fmt.Errorf("encode thread %q: %w", th.ID, errEncode)
	}
	e.b = append(append(append(e.b, ','), threadTable().fields[threadSteps].member...), '[')
	return e.b, nil
}

// encodeStep encodes step si of thread ti whole.
func (w *Writer) encodeStep(ti, si int) (stepPieces, error) {
	s := w.t.Threads[ti].Steps[si]
	s.normalize()
	req, err := marshalRequest(&s.Request)
	if err != nil {
		return stepPieces{}, fmt.Errorf("encode step %d of thread %q: %w", si, w.t.Threads[ti].ID, err)
	}
	ps := stepPieces{request: w.newPiece(req)}
	if w.digests {
		ps.hash = &stepHasher{afterRequest: w.hs.hashRequest(req)}
	}
	return w.encodeStepAnswer(ti, si, ps)
}

// encodeStepAnswer encodes what follows a step's request.
func (w *Writer) encodeStepAnswer(ti, si int, ps stepPieces) (stepPieces, error) {
	s := w.t.Threads[ti].Steps[si]
	s.normalize()
	// The piece is built in one allocation of its size: an answer may be tens of megabytes.
	n := 2*len(s.Response.Raw) + 2<<10
	for _, c := range s.Response.Chunks {
		n += len(c.Data) + len(c.Data)/2 + 32
	}
	e := enc{b: make([]byte, 0, n), ok: true}
	spans := make([]span, len(stepTable().fields))
	writeSpans(&e, stepTable(), s, stepRequest+1, stepToolResults, false, spans)
	if !e.ok {
		return stepPieces{}, w.stepError(ti, si, s)
	}
	ps.answer = w.newPiece(e.b)
	if ps.hash != nil {
		h := ps.hash.clone() // ps may be the step's current pieces, replaced only on success
		resp := spans[stepResponse]
		h.afterAnswer = w.hs.hashAnswer(h.afterRequest, e.b[resp.from:resp.to])
		// The response is in afterAnswer's state: only the members after it are kept (a
		// canonical copy of the answer, tens of megabytes, kept for every step, was the
		// recording's largest cost in memory).
		h.setCanon(e.b, spans, stepResponse+1, stepToolResults)
		ps.hash = h
	}
	return w.encodeStepEnd(ti, si, ps)
}

// stepError is the error encoding/json gives for step si of thread ti, which the field
// table's encoder refused.
func (w *Writer) stepError(ti, si int, s *Step) error {
	_, err := marshalPiece(s)
	return fmt.Errorf("encode step %d of thread %q: %w", si, w.t.Threads[ti].ID, cmp.Or(err, errEncode))
}

// encodeStepEnd encodes a step's tool results and timing.
func (w *Writer) encodeStepEnd(ti, si int, ps stepPieces) (stepPieces, error) {
	s := w.t.Threads[ti].Steps[si]
	s.normalize()
	e := enc{b: make([]byte, 0, 1<<10), ok: true}
	spans := make([]span, len(stepTable().fields))
	s.Digest = ""
	writeSpans(&e, stepTable(), s, stepToolResults, stepDig, false, spans)
	if !e.ok {
		return stepPieces{}, w.stepError(ti, si, s)
	}
	if ps.hash != nil {
		h := ps.hash.clone()
		h.setCanon(e.b, spans, stepToolResults, stepDig)
		h.content = w.hs.hashEnd(h.afterAnswer, h.canon)
		h.link = w.hs.chain(w.prevLink(ti, si), h.content)
		ps.hash = h
		s.Digest = formatSum(h.link)
		w.rootDirty = true
		writeMembers(&e, stepTable(), s, stepDig, stepDig+1, false)
	}
	e.b = append(e.b, '}')
	ps.end = w.newPiece(e.b)
	return ps, nil
}

// prevLink is the link before step si of thread ti: the step before's, or the thread's
// genesis.
func (w *Writer) prevLink(ti, si int) sum {
	tp := w.threads[ti]
	if si == 0 || si > len(tp.steps) {
		if si > len(tp.steps) {
			panic("tape: prevLink past the thread's pieces")
		}
		return tp.genesis
	}
	return tp.steps[si-1].hash.link
}

// relink gives the steps of thread ti after step si their links again, after step si's
// link changed (its tool results arrived after a later step of its thread was recorded);
// only their ends are encoded again.
func (w *Writer) relink(ti, si int) error {
	if !w.digests {
		return nil
	}
	tp := w.threads[ti]
	for j := si + 1; j < len(tp.steps); j++ {
		ps, err := w.encodeStepEnd(ti, j, tp.steps[j])
		if err != nil {
			return err
		}
		tp.steps[j] = ps
	}
	if si+1 < len(tp.steps) {
		w.changed(w.stepPos(ti, si+1, 3))
	}
	return nil
}

// addThreadPieces encodes a thread already appended to w.t.Threads.
func (w *Writer) addThreadPieces(th *Thread) error {
	i := len(w.threads)
	if th.Steps == nil {
		th.Steps = []*Step{}
	}
	head, err := w.encodeThreadHead(i)
	if err != nil {
		return err
	}
	tp := &threadPieces{head: w.newPiece(head)}
	if w.digests {
		if tp.genesis, err = w.hs.genesis(w.t.Meta.TapeID, th.ID, th.Parent); err != nil {
			return err
		}
		w.rootDirty = true
	}
	w.changed(w.threadPos(i))
	w.threads = append(w.threads, tp)
	for j := range th.Steps {
		ps, err := w.encodeStep(i, j)
		if err != nil {
			return err
		}
		tp.steps = append(tp.steps, ps)
	}
	w.changed(w.tailPos())
	return nil
}

// UpdateMeta changes the tape's meta. The change is persisted by the next Sync; it costs a
// rewrite of the whole file, so call it rarely (at the start and at the end of a run).
func (w *Writer) UpdateMeta(fn func(*Meta)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fn(&w.t.Meta)
	w.t.Meta.normalize()
	return w.encodeHead()
}

// AddThread appends a thread (with no steps yet) and returns its index.
func (w *Writer) AddThread(id string, parent *Parent) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t.Thread(id) != nil {
		return 0, fmt.Errorf("add thread %q: a thread with this id exists", id)
	}
	th := &Thread{ID: id, Parent: parent, Steps: []*Step{}}
	w.t.Threads = append(w.t.Threads, th)
	if err := w.addThreadPieces(th); err != nil {
		return 0, err
	}
	return len(w.t.Threads) - 1, nil
}

// AppendStep appends s to the thread with index ti and returns the step's index. The Writer
// owns s from then on.
func (w *Writer) AppendStep(ti int, s *Step) (int, error) {
	return w.appendStep(ti, s, nil, nil)
}

// PreparedStep is a step whose request is encoded ahead of AppendPrepared, for instance
// while the call is in flight, so that appending it encodes only the answer.
type PreparedStep struct {
	step    *Step
	request []byte
	hashed  []byte // the hash state after the request (HashRequest), or nil
}

// HashRequest hashes the prepared request with hs ahead of AppendPrepared for a Writer
// with digests (the same hs), so that appending it hashes only the answer. Call it off the
// answer's path.
func (p *PreparedStep) HashRequest(hs Hashing) { p.hashed = hs.hashRequest(p.request) }

// Prepare encodes s's request for AppendPrepared. s.Request must not change after it;
// the rest of s may.
func Prepare(s *Step) (*PreparedStep, error) {
	s.normalize()
	req, err := marshalRequest(&s.Request)
	if err != nil {
		return nil, fmt.Errorf("prepare step: %w", err)
	}
	return &PreparedStep{step: s, request: req}, nil
}

// Step returns the prepared step.
func (p *PreparedStep) Step() *Step { return p.step }

// AppendPrepared is AppendStep for a prepared step: it encodes only what follows the
// request. The Writer owns the step from then on.
func (w *Writer) AppendPrepared(ti int, p *PreparedStep) (int, error) {
	return w.appendStep(ti, p.step, p.request, p.hashed)
}

func (w *Writer) appendStep(ti int, s *Step, request, hashed []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ti < 0 || ti >= len(w.t.Threads) {
		return 0, fmt.Errorf("append step: no thread %d", ti)
	}
	th := w.t.Threads[ti]
	th.Steps = append(th.Steps, s)
	si := len(th.Steps) - 1
	var (
		ps  stepPieces
		err error
	)
	if request != nil {
		ps = stepPieces{request: w.newPiece(request)}
		if w.digests {
			if hashed == nil {
				hashed = w.hs.hashRequest(request)
			}
			ps.hash = &stepHasher{afterRequest: hashed}
		}
		ps, err = w.encodeStepAnswer(ti, si, ps)
	} else {
		ps, err = w.encodeStep(ti, si)
	}
	if err != nil {
		th.Steps = th.Steps[:si]
		return 0, err
	}
	w.changed(w.stepPos(ti, si, 0))
	w.threads[ti].steps = append(w.threads[ti].steps, ps)
	return si, nil
}

// UpdateStep changes step si of thread ti. Persisted by the next Sync. The step is encoded
// again whole; UpdateStepEnd is cheaper for the tool results and the timing.
func (w *Writer) UpdateStep(ti, si int, fn func(*Step)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStep("update", ti, si); err != nil {
		return err
	}
	if w.threads[ti].steps[si].released {
		return fmt.Errorf("update step %d of thread %d: it was released, and only its answer, tool results and timing can change", si, ti)
	}
	fn(w.t.Threads[ti].Steps[si])
	ps, err := w.encodeStep(ti, si)
	return w.replaceStep(ti, si, 1, ps, err)
}

// Release drops from memory what step si of thread ti holds that its encoding on disk
// (once synced) holds already: its raw bodies, its chunks and the normalized conversation
// (the request's system, messages, tools and params; the response's content). A recorder
// that will not read them again calls it once the step is appended, so that its memory
// does not grow with the tape. Tape then shows the step without them; the file keeps them.
// Afterwards UpdateStep of the step fails, and UpdateStepAnswer must set the response's
// body or chunks and its content again.
func (w *Writer) Release(ti, si int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStep("release", ti, si); err != nil {
		return err
	}
	s := w.t.Threads[ti].Steps[si]
	s.Request.Raw, s.Request.System, s.Request.Messages, s.Request.Tools, s.Request.Params = nil, "", nil, nil, nil
	s.Response.Raw, s.Response.Chunks, s.Response.Content = nil, nil, nil
	w.threads[ti].steps[si].released = true
	return nil
}

// UpdateStepAnswer changes what follows the request of step si of thread ti (its
// response, tool calls, tool results and timing: what more of a stream brings); fn must not
// change the step's request, which is not encoded again. Persisted by the next Sync.
func (w *Writer) UpdateStepAnswer(ti, si int, fn func(*Step)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStep("update", ti, si); err != nil {
		return err
	}
	fn(w.t.Threads[ti].Steps[si])
	ps, err := w.encodeStepAnswer(ti, si, w.threads[ti].steps[si])
	return w.replaceStep(ti, si, 2, ps, err)
}

// UpdateStepEnd changes the tool results and the timing of step si of thread ti (what the
// thread's next request brings); only those are encoded again. Persisted by the next Sync.
func (w *Writer) UpdateStepEnd(ti, si int, fn func(results *[]ToolResult, timing *Timing)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStep("update", ti, si); err != nil {
		return err
	}
	s := w.t.Threads[ti].Steps[si]
	fn(&s.ToolResults, &s.Timing)
	ps, err := w.encodeStepEnd(ti, si, w.threads[ti].steps[si])
	return w.replaceStep(ti, si, 3, ps, err)
}

// checkStep says, for the operation op, when thread ti has no step si.
func (w *Writer) checkStep(op string, ti, si int) error {
	if ti < 0 || ti >= len(w.t.Threads) || si < 0 || si >= len(w.t.Threads[ti].Steps) {
		return fmt.Errorf("%s step: no step %d in thread %d", op, si, ti)
	}
	return nil
}

// replaceStep makes ps, encoded again from piece k of step si of thread ti on (1 the
// request, 2 the answer, 3 the end), the step's pieces and gives the later steps of its
// thread their links again; on an encoding error (err) the step keeps its pieces.
func (w *Writer) replaceStep(ti, si, k int, ps stepPieces, err error) error {
	if err != nil {
		return err
	}
	w.threads[ti].steps[si] = ps
	w.changed(w.stepPos(ti, si, k))
	return w.relink(ti, si)
}

// layout lists the current pieces in file order.
func (w *Writer) layout() []piece {
	ps := []piece{w.head}
	for _, tp := range w.threads {
		ps = append(ps, tp.head)
		for i, sp := range tp.steps {
			if i == 0 {
				ps = append(ps, firstStepOpen)
			} else {
				ps = append(ps, stepOpen)
			}
			ps = append(ps, sp.request, sp.answer, sp.end)
		}
		ps = append(ps, threadTail)
	}
	return append(ps, w.tail)
}

// tailPos is the layout position of the piece that closes the tape.
func (w *Writer) tailPos() int { return w.threadPos(len(w.threads)) }

// encodeTail encodes the piece that closes the tape again, with the root digest, when the
// root changed.
func (w *Writer) encodeTail() error {
	if !w.digests || !w.rootDirty {
		return nil
	}
	lasts := make([]sum, len(w.threads))
	for i, tp := range w.threads {
		lasts[i] = tp.genesis
		if n := len(tp.steps); n > 0 {
			lasts[i] = tp.steps[n-1].hash.link
		}
	}
	d := w.hs.newDigest(w.metaSum, lasts)
	w.t.Digest = d
	e := enc{b: []byte("]"), ok: true}
	writeMembers(&e, tapeTable(), w.t, tapeDigest, tapeDigest+1, false)
	w.tail = piece{data: append(e.b, "}\n"...)}
	w.rootDirty = false
	w.changed(w.tailPos())
	return nil
}

// Sync persists the tape: when it returns nil, the file at the Writer's path is the
// complete tape as it is now.
func (w *Writer) Sync() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("sync tape: writer is closed")
	}
	if err := w.sync(); err != nil {
		return fmt.Errorf("sync tape %s: %w", w.path, err)
	}
	return nil
}

// appendFrom appends to pieces the pieces from layout position from on, and to ends their
// end offsets counted from off.
func (w *Writer) appendFrom(pieces []piece, ends []int64, from int, off int64) ([]piece, []int64) {
	add := func(p piece) {
		pieces = append(pieces, p)
		off += p.size()
		ends = append(ends, off)
	}
	pos := 0
	if from <= pos {
		add(w.head)
	}
	pos++
	for _, tp := range w.threads {
		size := 2 + 4*len(tp.steps)
		if pos+size <= from {
			pos += size
			continue
		}
		if from <= pos {
			add(tp.head)
		}
		pos++
		first := 0
		if from > pos {
			first = (from - pos) / 4
		}
		pos += 4 * first
		for si := first; si < len(tp.steps); si++ {
			sp := tp.steps[si]
			open := stepOpen
			if si == 0 {
				open = firstStepOpen
			}
			for _, p := range [4]piece{open, sp.request, sp.answer, sp.end} {
				if from <= pos {
					add(p)
				}
				pos++
			}
		}
		if from <= pos {
			add(threadTail)
		}
		pos++
	}
	if from <= pos {
		add(w.tail)
	}
	return pieces, ends
}

// writePieces writes pieces one after the other into slot dst from off on: small ones
// gathered in buf (which it returns, for reuse), large ones as they are, or, once dropped,
// copied from slot src, the one published last.
func writePieces(dst int, f *os.File, src *os.File, buf []byte, pieces []piece, off int64) ([]byte, error) {
	buf = buf[:0]
	at := off // where buf goes
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := f.WriteAt(buf, at)
		at += int64(len(buf))
		buf = buf[:0]
		return err
	}
	for _, p := range pieces {
		if p.big == nil {
			buf = append(buf, p.data...)
			continue
		}
		if err := flush(); err != nil {
			return buf, err
		}
		b := p.big
		var err error
		if b.data != nil {
			_, err = f.WriteAt(b.data, at)
		} else {
			err = copyRange(f, at, src, b.at[1-dst], b.size)
		}
		if err != nil {
			return buf, err
		}
		b.at[dst] = at
		at += b.size
	}
	return buf, flush()
}

// copyRange copies n bytes at srcOff in src to dstOff in dst, in the kernel where it can
// (copy_file_range on Linux). It moves both files' offsets, which the Writer does not use
// otherwise.
func copyRange(dst *os.File, dstOff int64, src *os.File, srcOff, n int64) error {
	if srcOff < 0 {
		return errors.New("copy a piece: it is not in the slot published last")
	}
	if _, err := dst.Seek(dstOff, io.SeekStart); err != nil {
		return err
	}
	if _, err := src.Seek(srcOff, io.SeekStart); err != nil {
		return err
	}
	k, err := dst.ReadFrom(&io.LimitedReader{R: src, N: n})
	if err == nil && k < n {
		err = fmt.Errorf("copy a piece: %d of %d bytes: %w", k, n, io.ErrUnexpectedEOF)
	}
	return err
}

// dropWritten drops the data of the large pieces a Sync wrote, now that the slot holding
// them is published.
func dropWritten(pieces []piece) {
	for _, p := range pieces {
		if p.big != nil {
			p.big.data = nil
		}
	}
}

// bytesOf returns a piece's bytes, read back from the slot published last if dropped.
func (w *Writer) bytesOf(p piece) ([]byte, error) {
	if p.big == nil {
		return p.data, nil
	}
	if p.big.data != nil {
		return p.big.data, nil
	}
	pub := 1 - w.next
	if p.big.at[pub] < 0 {
		return nil, errors.New("read a piece: it is not in the slot published last")
	}
	b := make([]byte, p.big.size)
	if _, err := w.slots[pub].f.ReadAt(b, p.big.at[pub]); err != nil {
		return nil, fmt.Errorf("read a piece back: %w", err)
	}
	return b, nil
}

// clean is a slot's from when nothing changed since the slot was written.
const clean = int(^uint(0) >> 1)

func (w *Writer) sync() error {
	if err := w.encodeTail(); err != nil {
		return err
	}
	if w.noLinks {
		return w.rewrite(w.layout())
	}
	s := w.slots[w.next]
	// Rewrite the slot from the first piece that changed since it was last written.
	from := min(s.from, len(s.ends))
	var off int64
	if from > 0 {
		off = s.ends[from-1]
	}
	pieces, ends := w.appendFrom(w.pieces[:0], s.ends[:from], from, off)
	// Until the write succeeds the slot's content is unknown: rewrite it whole next time.
	s.ends, s.from = ends[:0], 0
	end := off
	if len(ends) > 0 {
		end = ends[len(ends)-1]
	}
	if end > s.alloc {
		w.grow(s, end) // usually done ahead, by PrepareSync
	}
	buf, err := writePieces(w.next, s.f, w.slots[1-w.next].f, w.buf, pieces, off)
	defer func() {
		clear(pieces) // the pieces may be replaced: do not hold them
		w.pieces = pieces[:0]
	}()
	w.buf = buf
	if cap(buf) > 64<<20 {
		w.buf = nil // a huge step: do not hold its copy
	}
	if err != nil {
		return err
	}
	if end < s.size { // only a shrinking tape (a meta rewrite) leaves bytes to cut
		if err := s.f.Truncate(end); err != nil {
			return err
		}
	}
	s.size = end
	if !w.noFsync {
		if err := s.f.Sync(); err != nil {
			return err
		}
	}
	s.ends, s.from = ends, clean
	tmp := s.link
	s.link = ""
	if tmp == "" {
		var err error
		if tmp, err = w.linkSlot(s); err != nil {
			// No hard links on this file system: fall back to whole-file rewrites.
			w.noLinks = true
			return w.rewrite(w.layout())
		}
	}
	if err := os.Rename(tmp, w.path); err != nil {
		os.Remove(tmp)
		return err
	}
	if w.first {
		// Renaming a link onto a name of the same file does nothing and leaves the link:
		// possible only on the first publish, when the path was a stale slot's link.
		os.Remove(tmp)
		w.first = false
	}
	w.next = 1 - w.next
	dropWritten(pieces) // the slot just published holds them
	if w.noFsync {
		return nil
	}
	return SyncDir(filepath.Dir(w.path))
}

// linkSlot makes a new hard link to slot s, to publish it by renaming the link over the
// tape's path.
func (w *Writer) linkSlot(s *slot) (string, error) {
	tmp := filepath.Join(filepath.Dir(w.path), "."+filepath.Base(w.path)+".publish-"+NewID()[:8])
	if err := os.Link(s.path, tmp); err != nil {
		return "", err
	}
	return tmp, nil
}

// grow preallocates slot s's blocks up to a chunk past end.
func (w *Writer) grow(s *slot, end int64) {
	if w.noAlloc {
		return
	}
	to := end + preallocChunk
	if err := preallocate(s.f, s.alloc, to); err != nil {
		w.noAlloc = true
		return
	}
	s.alloc = to
}

// PrepareSync does ahead of time what the next Syncs need besides writing: the hard link
// that will publish the slot the next Sync writes, and room in the slots' files. Call it
// when the Writer would otherwise wait (a recorder calls it while a call is upstream); Sync
// does what it needs itself when it was not done.
func (w *Writer) PrepareSync() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.noLinks {
		return
	}
	size := max(w.slots[0].size, w.slots[1].size)
	for _, s := range w.slots {
		if size+preallocChunk/2 > s.alloc {
			w.grow(s, size)
		}
	}
	s := w.slots[w.next]
	if s.link != "" {
		return
	}
	if tmp, err := w.linkSlot(s); err == nil {
		s.link = tmp
	}
}

func (w *Writer) rewrite(ps []piece) error {
	var buf bytes.Buffer
	for _, p := range ps {
		b, err := w.bytesOf(p)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return WriteFileAtomic(w.path, buf.Bytes())
}

// Finish records how the run ended, persists the tape and closes the Writer.
func (w *Writer) Finish(reason EndReason, at time.Time, detail string) error {
	return w.End(Ended{Reason: reason, At: at, Detail: detail})
}

// End is Finish with the whole of meta.ended (a budget's limit, say).
func (w *Writer) End(e Ended) error {
	e.At = e.At.UTC()
	if err := w.UpdateMeta(func(m *Meta) {
		m.Ended = &e
	}); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return err
	}
	return w.Close()
}

// Close releases the slot files. It does not sync: call Sync or Finish first.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.closeSlots()
}

func (w *Writer) closeSlots() error {
	var errs []error
	for _, s := range w.slots {
		if s == nil {
			continue
		}
		if s.alloc > s.size {
			release(s.f, s.size) // the tape may be this file
		}
		errs = append(errs, s.f.Close())
		for _, p := range []string{s.path, s.link} {
			if p == "" {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		s.link = ""
	}
	return errors.Join(errs...)
}

// MarshalStep returns the canonical encoding of one step (used by tests and tools that
// compare steps).
func MarshalStep(s *Step) (json.RawMessage, error) {
	s.normalize()
	e := enc{b: make([]byte, 0, stepHint(s)), ok: true}
	if e.step(s); e.ok {
		return fixReplacement(e.b), nil
	}
	return marshalPiece(s)
}
