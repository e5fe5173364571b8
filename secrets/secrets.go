package secrets

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"

	"github.com/tapebox/tapebox/tape"
)

// maxDecodeDepth is how many times gitleaks decodes base64, hex and percent-encoded text
// and scans the result again: 5, its own command's default, so a key inside a base64
// blob (a Kubernetes secret in a tool result, a Basic credential) is found.
const maxDecodeDepth = 5

// Finding is one place in a tape where a secret was found.
type Finding struct {
	// File is the tape file; empty when the tape did not come from a file.
	File string `json:"file,omitempty"`
	// Pointer is the JSON pointer (RFC 6901) of the string that holds the secret, inside
	// the raw bodies too: /threads/0/steps/3/request/raw/messages/2/content/0/text.
	Pointer string `json:"pointer"`
	// Offset is where the secret starts in that string, in bytes of the decoded string.
	Offset int `json:"offset"`
	// Rule is the gitleaks rule that matched, for example anthropic-api-key.
	Rule string `json:"rule"`
	// Preview is the secret's first four characters and "…"; the secret itself is never
	// kept.
	Preview string `json:"preview"`
	// Secret numbers the distinct secrets of one tape from 1, in order of first appearance:
	// findings with the same number are places of the same secret.
	Secret int `json:"secret"`
	// Length is how many bytes of the string, from Offset, the secret takes; for a secret
	// found decoded (inside base64, hex or percent-encoded text), the encoded text that
	// holds it. A redaction replaces those bytes.
	Length int `json:"length"`
	// Key is true when the secret is in the member name at Pointer rather than in its
	// value.
	Key bool `json:"key,omitempty"`
	// Member is set for a secret in the tape's start snapshot (Pointer is then
	// /meta/workspace/snapshot): the name of the entry inside the snapshot's tar, and
	// Offset counts bytes of that file's content, unless In says otherwise.
	Member string `json:"member,omitempty"`
	// In is set for a secret in a snapshot entry's name ("name") or in a symbolic link's
	// target ("link") rather than in a file's content: Offset and Length then count bytes
	// of that string.
	In string `json:"in,omitempty"`
}

// Values of Finding.In.
const (
	InName = "name"
	InLink = "link"
)

// String formats f as "FILE: POINTER: RULE: PREVIEW" (without "FILE: " when File is empty);
// a secret in a member name has " (member name)" after the pointer, one in a snapshot the
// file inside it: "FILE: /meta/workspace/snapshot: .env: RULE: PREVIEW". A secret in a
// name is masked there; Masked masks it in the other findings of its tape.
func (f Finding) String() string {
	f = Masked([]Finding{f})[0]
	where := f.Pointer
	if f.Key {
		where += " (member name)"
	}
	if f.Member != "" {
		where += ": " + f.Member
	}
	switch f.In {
	case InName:
		where += " (name)"
	case InLink:
		where += " (link target)"
	}
	s := where + ": " + f.Rule + ": " + f.Preview
	if f.File != "" {
		s = f.File + ": " + s
	}
	return s
}

// Scanner finds secrets with gitleaks' default rule set and the rules of this package
// (ExtraRules). It is safe for concurrent use.
type Scanner struct {
	detector *detect.Detector
	engine   *engine
}

// New compiles gitleaks' default rule set and ExtraRules into a Scanner, with a detector
// and an anchor for each rule (about 0.4 s; Default does it once per process).
func New() (*Scanner, error) {
	silenceGitleaks()
	cfg, err := gitleaksConfig()
	if err != nil {
		return nil, err
	}
	for _, r := range extraRules() {
		cfg.Rules[r.RuleID] = r
		cfg.OrderedRules = append(cfg.OrderedRules, r.RuleID)
		for _, k := range r.Keywords {
			cfg.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	e := newEngine(cfg, maxDecodeDepth)
	return &Scanner{detector: e.full, engine: e}, nil
}

// gitleaksConfig reads gitleaks' default rule set.
func gitleaksConfig() (config.Config, error) {
	// A viper instance of our own rather than detect.NewDetectorDefaultConfig, which sets
	// up the process-wide one.
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return config.Config{}, fmt.Errorf("read gitleaks rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, fmt.Errorf("read gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Config{}, fmt.Errorf("compile gitleaks rules: %w", err)
	}
	return cfg, nil
}

// gitleaks logs through a package-level logger that writes to stderr; a library user
// reports findings itself.
var silenceGitleaks = sync.OnceFunc(func() { logging.Logger = zerolog.Nop() })

var defaultScanner = sync.OnceValues(New)

// Default returns the Scanner the package-level functions use, compiled on first use.
func Default() (*Scanner, error) { return defaultScanner() }

// Rules returns the number of rules the scanner applies.
func (s *Scanner) Rules() int { return len(s.detector.Config.Rules) }

// RuleSet names the rule set: "gitleaks v8.30.1", as the binary was built with it.
func RuleSet() string {
	const mod = "github.com/zricethezav/gitleaks/v8"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				return "gitleaks " + d.Version
			}
		}
	}
	return "gitleaks v8"
}

// Scan returns the findings in t, in document order of its canonical encoding.
func Scan(ctx context.Context, t *tape.Tape) ([]Finding, error) {
	s, err := Default()
	if err != nil {
		return nil, err
	}
	return s.Scan(ctx, t)
}

// ScanFile returns the findings in the tape file at path.
func ScanFile(ctx context.Context, path string) ([]Finding, error) {
	s, err := Default()
	if err != nil {
		return nil, err
	}
	return s.ScanFile(ctx, path)
}

// Scan returns the findings in t, in document order of its canonical encoding. The start
// snapshot is not read: t has no file to find it beside (ScanFile reads it).
func (s *Scanner) Scan(ctx context.Context, t *tape.Tape) ([]Finding, error) {
	data, err := tape.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("scan tape: %w", err)
	}
	sc := s.newScan(ctx)
	err = walkJSONMemo(data, sc.containerMemo(len(data)), sc.visit)
	return sc.numbered(), err
}

// Options changes what ScanFileWith, ScanFilesWith and CheckWith read.
type Options struct {
	// SkipSnapshot leaves a tape's start snapshot (meta.workspace.snapshot, a file beside
	// the tape) unread, for tapes published without theirs (dataset export --no-workspace).
	SkipSnapshot bool

	// workers, set by ScanFilesWith, is shared by the scans of its files: the calling
	// goroutine holds one of its tokens.
	workers *workers
}

// ScanFile returns the findings in the tape file at path, with File set to path, and in
// the start snapshot it names (see ScanFileWith).
func (s *Scanner) ScanFile(ctx context.Context, path string) ([]Finding, error) {
	return s.ScanFileWith(ctx, path, Options{})
}

// ScanFileWith returns the findings in the tape file at path, with File set to path. When
// the tape names a start snapshot (meta.workspace.snapshot), every entry of it is scanned
// too: the findings there have Pointer /meta/workspace/snapshot and Member the file's name
// inside the tar. A snapshot that is missing or cannot be read is an error, unless
// opts.SkipSnapshot: what cannot be read is not known to be clean.
func (s *Scanner) ScanFileWith(ctx context.Context, path string, opts Options) ([]Finding, error) {
	data, release, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", path, err)
	}
	sc := s.newScan(ctx)
	if opts.workers == nil {
		opts.workers = newWorkers()
		opts.workers.acquire() // the calling goroutine's
		defer opts.workers.release()
	}
	sc.workers = opts.workers
	err = sc.walkDoc(data)
	release()
	if err == nil && sc.snapshot != "" && !opts.SkipSnapshot {
		err = sc.scanSnapshot(path, sc.snapshot)
	}
	found := sc.numbered()
	for i := range found {
		found[i].File = path
	}
	if err != nil {
		return found, fmt.Errorf("scan %s: %w", path, err)
	}
	return found, nil
}

// walkDoc scans the JSON document in data: in parts on the free cores (splitJSON) when
// it is large enough and a core is free, walked whole otherwise and when a part fails (the document is not
// valid JSON: the walk of the whole gives the error, and the findings before it, that a
// walk of the whole gives).
func (sc *scan) walkDoc(data []byte) error {
	if len(data) < splitBytes || sc.workers == nil || !sc.workers.idle() {
		// Small, or every core busy with other files: splitting would only cost.
		return walkJSONMemo(data, sc.containerMemo(len(data)), sc.visit)
	}
	parts, ok := splitJSON(data, partBytes)
	if !ok || len(parts) < 2 {
		return walkJSONMemo(data, sc.containerMemo(len(data)), sc.visit)
	}
	subs := make([]*scan, len(parts))
	errs := make([]error, len(parts))
	sc.memo.share()
	sc.workers.each(len(parts), func(i int) {
		sub := sc.sub()
		errs[i] = walkPart(data, parts[i], sub.containerMemo(len(data)), sub.visit)
		subs[i] = sub
	})
	for _, err := range errs {
		if err != nil {
			if err := sc.ctx.Err(); err != nil {
				return err
			}
			return walkJSONMemo(data, sc.containerMemo(len(data)), sc.visit)
		}
	}
	for _, sub := range subs {
		sc.found = append(sc.found, sub.found...)
		sc.secretOf = append(sc.secretOf, sub.secretOf...)
		if sub.snapshot != "" {
			sc.snapshot = sub.snapshot
		}
	}
	return nil
}

// ScanJSON reads one JSON document (a tape, or any JSON) from r and returns the findings
// in every string of it, member names included, in document order. On a JSON error it
// returns the findings before the error and the error.
func (s *Scanner) ScanJSON(ctx context.Context, r io.Reader) ([]Finding, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read JSON: %w", err)
	}
	sc := s.newScan(ctx)
	err = walkJSONMemo(data, sc.containerMemo(len(data)), sc.visit)
	return sc.numbered(), err
}

// ScanText returns the findings in text, a file's content or any other text, as a scan
// sees a string with no member name: Pointer is empty and Offset counts bytes of text.
func (s *Scanner) ScanText(ctx context.Context, text string) ([]Finding, error) {
	sc := s.newScan(ctx)
	hits, err := sc.hits("", text)
	for _, h := range hits {
		sc.add(h, Finding{})
	}
	return sc.numbered(), err
}

// memoLimit bounds the distinct strings a scan remembers the hits of.
const memoLimit = 1 << 16

// hit is a secret in one string: where it starts and how long it is (in bytes of the
// string) and the rule.
type hit struct {
	offset, length int
	rule           string
	secret         string
}

// scan is the state of one document's scan, or of one part of it (sub).
type scan struct {
	s     *Scanner
	ctx   context.Context
	found []Finding
	// secretOf is the secret of each finding of found, for numbering them (numbered).
	secretOf []string
	// memo holds the hits of each distinct string already given to the rules: a tape
	// repeats its conversation in every request, and its tool definitions, and the
	// normalized fields repeat the raw bodies. The parts of a document share it.
	memo *memo
	// containers is the memo of the containers walked (see containerMemo), shared by
	// the parts of a document.
	containers *containers
	seen       int
	scratch    engineScratch
	text       []byte
	// snapshot is meta.workspace.snapshot, when the document has one.
	snapshot string
	// workers, when set, are the goroutines the scan may spread its parts over.
	workers *workers
}

func (s *Scanner) newScan(ctx context.Context) *scan {
	return &scan{s: s, ctx: ctx, memo: newMemo(), containers: &containers{}}
}

// sub returns the scan of a part of sc's document: it shares the memos.
func (sc *scan) sub() *scan {
	return &scan{s: sc.s, ctx: sc.ctx, memo: sc.memo, containers: sc.containers}
}

// containersOn turns the container memo off in tests, for the reference scan it must
// agree with.
var containersOn = true

// memoMinDoc is the size of a document from which its walk has a container memo: a
// smaller tape (a recording of a few steps) repeats too little for the lookups to pay.
var memoMinDoc = 256 << 10

// containerMemo returns sc as the containerMemo of the walk of a document of n bytes, or
// nil when it is off or the document small.
func (sc *scan) containerMemo(n int) containerMemo {
	if !containersOn || n < memoMinDoc {
		return nil
	}
	return sc
}

// containers holds, for the containers of a document walked to their end, where their
// bytes are and what was found in them: a container whose bytes are the same (compared
// byte for byte, not by hash alone), under the same member name and not deeper, has the
// same findings at the same places below it, and is valid JSON as the first was.
type containers struct {
	mu sync.Mutex
	m  map[uint64]*containerEntry
}

// replayedFindings counts the findings added from a container memo, for tests.
var replayedFindings atomic.Int64

type containerEntry struct {
	field      string
	start, end int
	depth      int
	// found are the findings in the container, Pointer relative to it.
	found    []Finding
	secretOf []string
}

// containerLimit bounds the containers a scan remembers.
const containerLimit = 1 << 14

var containerSeed = maphash.MakeSeed()

// containerEnds is how many bytes of each end of a container its key hashes.
const containerEnds = 48

// containerKey is the memo's key for a container's bytes b (at least containerMin long):
// a hash of its length and of its first and last containerEnds bytes, not of all of it,
// which would cost a pass over every byte looked up. Containers with the same key and
// other bytes are told apart by the comparison of their bytes.
func containerKey(b []byte) uint64 {
	n := min(containerEnds, len(b)/2)
	var buf [2*containerEnds + 8]byte
	k := copy(buf[:], b[:n])
	k += copy(buf[k:], b[len(b)-n:])
	binary.LittleEndian.PutUint64(buf[k:], uint64(len(b)))
	return maphash.Bytes(containerSeed, buf[:k+8])
}

// lookup implements containerMemo: a container walked before has its findings added at
// the place of this one, with the pointers they have here.
func (sc *scan) lookup(w *walker, data []byte, start, end int) (bool, *memoRecord) {
	field := w.field()
	key := containerKey(data[start:end])
	sc.containers.mu.Lock()
	e := sc.containers.m[key]
	sc.containers.mu.Unlock()
	if e != nil && e.field == field && len(w.stack) <= e.depth && e.end-e.start == end-start &&
		bytes.Equal(data[e.start:e.end], data[start:end]) {
		if len(e.found) > 0 {
			replayedFindings.Add(int64(len(e.found)))
			prefix := w.pointer()
			for i, f := range e.found {
				f.Pointer = prefix + f.Pointer
				sc.found = append(sc.found, f)
				sc.secretOf = append(sc.secretOf, e.secretOf[i])
			}
		}
		return true, nil
	}
	return false, &memoRecord{key: key, field: field, start: start, end: end, depth: len(w.stack), mark: len(sc.found)}
}

// store implements containerMemo.
func (sc *scan) store(w *walker, rec *memoRecord) {
	prefix := pointerOf(w.stack[:len(w.stack)-1])
	e := &containerEntry{field: rec.field, start: rec.start, end: rec.end, depth: rec.depth}
	for i := rec.mark; i < len(sc.found); i++ {
		f := sc.found[i]
		if !strings.HasPrefix(f.Pointer, prefix) {
			return // not below the container: never so
		}
		f.Pointer = f.Pointer[len(prefix):]
		e.found = append(e.found, f)
		e.secretOf = append(e.secretOf, sc.secretOf[i])
	}
	sc.containers.mu.Lock()
	if sc.containers.m == nil || len(sc.containers.m) >= containerLimit {
		sc.containers.m = map[uint64]*containerEntry{}
	}
	sc.containers.m[rec.key] = e
	sc.containers.mu.Unlock()
}

// numbered returns the findings with Secret numbering the distinct secrets from 1 in
// order of first appearance.
func (sc *scan) numbered() []Finding {
	groups := map[string]int{}
	for i := range sc.found {
		g, ok := groups[sc.secretOf[i]]
		if !ok {
			g = len(groups) + 1
			groups[sc.secretOf[i]] = g
		}
		sc.found[i].Secret = g
	}
	return sc.found
}

func (sc *scan) visit(w *walker, value string) error {
	if sc.seen++; sc.seen%1024 == 0 {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
	}
	if !w.inKey && len(w.stack) == 3 && w.stack[2].key == "snapshot" && w.stack[1].key == "workspace" && w.stack[0].key == "meta" && !w.stack[0].array && !w.stack[1].array {
		sc.snapshot = strings.Clone(value)
	}
	field := w.field()
	class := classOf(field)
	if class == opaque && !w.inKey {
		return nil
	}
	hits, err := sc.hits(field, value)
	if err != nil {
		return err
	}
	var ptr string
	for _, h := range hits {
		if class == protocolID && !w.inKey && isGeneric(h.rule) {
			continue
		}
		if ptr == "" {
			ptr = w.pointer()
		}
		sc.add(h, Finding{Pointer: ptr, Key: w.inKey})
	}
	return nil
}

// add records a hit as a finding at f's place (numbered later, by numbered).
func (sc *scan) add(h hit, f Finding) {
	f.Offset, f.Length, f.Rule, f.Preview = h.offset, h.length, h.rule, preview(h.secret)
	sc.found = append(sc.found, f)
	sc.secretOf = append(sc.secretOf, h.secret)
}

// hits scans one string. The rules see it as "FIELD: VALUE", the way they would see it in
// a JSON or YAML file, so that the generic rules find a secret by the name that holds it
// (a header x-custom-key, a member password). The prefilter (engine.candidate) passes
// over the strings that hold no keyword of any rule, most of a tape, without a copy.
func (sc *scan) hits(field, value string) ([]hit, error) {
	// Two hashes in one call each (maphash.Hash would hash the value 128 bytes at a
	// time), the field's with a seed of its own.
	fkey := maphash.String(fieldSeed, field)
	key := maphash.String(memoSeed, value) ^ (fkey * 0x9e3779b97f4a7c15)
	if hs, ok := sc.memo.get(key, fkey, len(value)); ok {
		return hs, nil
	}
	hs, err := sc.scanOne(field, value)
	if err != nil {
		return nil, err
	}
	sc.memo.put(key, memoEntry{field: fkey, n: len(value), hits: hs})
	return hs, nil
}

// memo is the hits of the strings a scan has seen, safe for the parts of a document
// scanned at once: shards, each a map under its own lock, chosen by the key's top bits.
type memo struct {
	shards [memoShards]memoShard
	// shared is set before the memo is used by more than one goroutine (share): until
	// then, its shards are not locked.
	shared bool
}

// share makes m safe for the goroutines started after it returns.
func (m *memo) share() { m.shared = true }

const memoShards = 16

type memoShard struct {
	mu sync.Mutex
	m  map[uint64]memoEntry
	_  [40]byte // a cache line each
}

func newMemo() *memo { return &memo{} }

func (m *memo) get(key, field uint64, n int) ([]hit, bool) {
	sh := &m.shards[key>>60]
	if m.shared {
		sh.mu.Lock()
	}
	e, ok := sh.m[key]
	if m.shared {
		sh.mu.Unlock()
	}
	if ok && e.field == field && e.n == n {
		return e.hits, true
	}
	return nil, false
}

func (m *memo) put(key uint64, e memoEntry) {
	sh := &m.shards[key>>60]
	if m.shared {
		sh.mu.Lock()
		defer sh.mu.Unlock()
	}
	if sh.m == nil {
		sh.m = map[uint64]memoEntry{}
	}
	if len(sh.m) >= memoLimit/memoShards {
		// Bounded memory on a tape of many distinct strings (a long stream's chunks); the
		// strings that repeat (the conversation, tool definitions) come back at once.
		clear(sh.m)
	}
	sh.m[key] = e
}

// memoSeed seeds the hash of the memo's keys: random for each process, so that no tape
// can be made to collide with another string on purpose.
var memoSeed, fieldSeed = maphash.MakeSeed(), maphash.MakeSeed()

// memoEntry is the hits of a string already scanned, under one 64-bit word made of the
// hashes of the string and of its member name (a map keyed by one word costs less to look
// up than by three); the member name's hash and the length tell it from another of the
// same key, which replaces it.
type memoEntry struct {
	field uint64
	n     int
	hits  []hit
}

// scanOne scans one string: hits without the memo.
func (sc *scan) scanOne(field, value string) ([]hit, error) {
	e := sc.s.engine
	if !e.candidate(value) && (field == "" || !e.dfa.any(field)) {
		return nil, nil
	}
	prefix := ""
	if field != "" {
		prefix = field + ": "
	}
	// gitleaks' rules end a secret at white space, a quote or ';', and a query string
	// ends one with '&': turned into a line break, byte for byte, so offsets hold.
	b := append(sc.text[:0], prefix...)
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == '&' {
			c = '\n'
		}
		b = append(b, c)
	}
	sc.text = b
	text := string(b)
	found := e.detect(sc.ctx, &sc.scratch, text)
	if err := sc.ctx.Err(); err != nil {
		return nil, err
	}
	var hs []hit
	for _, l := range found {
		off := l.offset - len(prefix)
		if off < 0 {
			// In the member name: found where the name itself is scanned.
			continue
		}
		h := hit{offset: off, length: min(l.length, len(value)-off), rule: l.f.RuleID, secret: l.f.Secret}
		if !slices.Contains(hs, h) {
			hs = append(hs, h)
		}
	}
	// gitleaks keeps its rules in a map: sort for a stable order.
	slices.SortFunc(hs, func(a, b hit) int {
		if a.offset != b.offset {
			return a.offset - b.offset
		}
		return strings.Compare(a.rule, b.rule)
	})
	return hs, nil
}

// locate returns the byte offset of f's secret in text. gitleaks gives the match's line
// and column, counted its own way; the match and the secret are then looked for from there.
func locate(text string, f report.Finding) int {
	_, off := locateMatch(text, f)
	return off
}

// locateMatch returns the byte offsets of f's match and of its secret in text.
func locateMatch(text string, f report.Finding) (match, secret int) {
	start := 0
	if f.StartLine > 0 {
		n := 0
		for i := 0; i < len(text); i++ {
			if text[i] == '\n' {
				if n++; n == f.StartLine {
					start = i
					break
				}
			}
		}
	}
	start = min(max(start+f.StartColumn-1, 0), len(text))
	if f.Match != "" {
		if i := strings.Index(text[start:], f.Match); i >= 0 {
			start += i
		} else if i := strings.Index(text, f.Match); i >= 0 {
			start = i
		}
	}
	if f.Secret != "" {
		if i := strings.Index(text[start:], f.Secret); i >= 0 {
			return start, start + i
		}
	}
	return start, start
}

// isGeneric says whether a rule matches any high-entropy value under a key-like name, as
// gitleaks itself tells them apart.
func isGeneric(rule string) bool { return strings.Contains(strings.ToLower(rule), "generic") }

// preview returns the first four characters of secret and "…" (fewer for a short secret:
// never more than half of it).
func preview(secret string) string {
	n := min(4, utf8.RuneCountInString(secret)/2)
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(secret[i:])
		i += size
	}
	return secret[:i] + "…"
}

// FileResult is the scan of one file.
type FileResult struct {
	Path     string
	Findings []Finding
	// Err is set when the file could not be read or is not JSON; Findings then holds
	// those found before the error.
	Err error
}

// ScanFiles scans the files at paths on GOMAXPROCS goroutines and returns one result per
// path, in the order of paths. When ctx is done, files not yet scanned get ctx's error.
func ScanFiles(ctx context.Context, paths []string) []FileResult {
	return ScanFilesWith(ctx, paths, Options{})
}

// ScanFilesWith is ScanFiles with opts.
func ScanFilesWith(ctx context.Context, paths []string, opts Options) []FileResult {
	results := make([]FileResult, len(paths))
	s, err := Default()
	for i, p := range paths {
		results[i] = FileResult{Path: p, Err: err}
	}
	if err != nil {
		return results
	}
	// The largest files first, so that the last ones to finish are small; a file's scan
	// holds a token of wk, and its parts take the free ones.
	order := make([]int, len(paths))
	sizes := make([]int64, len(paths))
	for i, p := range paths {
		order[i] = i
		if fi, err := os.Stat(p); err == nil {
			sizes[i] = fi.Size()
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	wk := newWorkers()
	opts.workers = wk
	var wg sync.WaitGroup
	for _, i := range order {
		wk.acquire()
		if err := ctx.Err(); err != nil {
			wk.release()
			results[i].Err = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer wk.release()
			results[i].Findings, results[i].Err = s.ScanFileWith(ctx, paths[i], opts)
		}()
	}
	wg.Wait()
	return results
}

// Check scans the tape files at paths and returns nil when none holds a secret, for a
// gate such as dataset export. Otherwise the error is a *FoundError naming file, JSON
// pointer and rule of each finding, joined with the errors of files that could not be
// scanned: a file the scanner cannot read is not known to be clean.
func Check(ctx context.Context, paths ...string) error {
	return CheckWith(ctx, Options{}, paths...)
}

// CheckWith is Check with opts.
func CheckWith(ctx context.Context, opts Options, paths ...string) error {
	var found []Finding
	var errs []error
	for _, r := range ScanFilesWith(ctx, paths, opts) {
		found = append(found, r.Findings...)
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	if len(found) > 0 {
		errs = append([]error{&FoundError{Findings: found}}, errs...)
	}
	return errors.Join(errs...)
}

// FoundError says that tapes hold secrets.
type FoundError struct {
	// Findings, file by file in the order scanned.
	Findings []Finding
}

// foundErrorLines is how many findings FoundError's message lists.
const foundErrorLines = 10

func (e *FoundError) Error() string {
	files := map[string]bool{}
	for _, f := range e.Findings {
		files[f.File] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s in %d %s", len(e.Findings), plural(len(e.Findings), "secret finding", "secret findings"),
		len(files), plural(len(files), "tape", "tapes"))
	for i, f := range Masked(e.Findings) {
		if i == foundErrorLines {
			fmt.Fprintf(&b, "\n  … and %d more (tapebox scan lists them all)", len(e.Findings)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(f.String())
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Masked returns copies of fs (the findings of one tape) in which every secret found in a
// member name or in a snapshot entry's name or link target, which Pointer or Member would
// otherwise spell out (a value under a member named with a secret has it in its pointer,
// a file in a directory named with one in its Member), is replaced by its preview: what
// may be printed or stored. The findings cannot then be given to a redaction, which needs
// the places as they are.
func Masked(fs []Finding) []Finding {
	var secrets []string
	for _, f := range fs {
		var in string
		switch {
		case f.Key:
			in = lastToken(f.Pointer)
		case f.In == InName:
			in = f.Member
		default:
			continue
		}
		if f.Offset >= 0 && f.Length > 0 && f.Offset+f.Length <= len(in) {
			secrets = append(secrets, in[f.Offset:f.Offset+f.Length])
		}
	}
	out := slices.Clone(fs)
	if len(secrets) == 0 {
		return out
	}
	// Longest first: a secret that holds another is masked whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, s := range slices.Compact(secrets) {
		pairs = append(pairs, s, preview(s))
		if e := escapePointer(s); e != s {
			pairs = append(pairs, e, preview(s))
		}
	}
	r := strings.NewReplacer(pairs...)
	for i := range out {
		out[i].Pointer, out[i].Member = r.Replace(out[i].Pointer), r.Replace(out[i].Member)
	}
	return out
}

// lastToken is the last token of a JSON pointer, unescaped.
func lastToken(ptr string) string {
	tok := ptr[strings.LastIndexByte(ptr, '/')+1:]
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
}
