package secrets

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/logging"
	"github.com/zricethezav/gitleaks/v8/report"
	"golang.org/x/sync/errgroup"

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
}

// String formats f as "FILE: POINTER: RULE: PREVIEW" (without "FILE: " when File is empty).
func (f Finding) String() string {
	s := f.Pointer + ": " + f.Rule + ": " + f.Preview
	if f.File != "" {
		s = f.File + ": " + s
	}
	return s
}

// Scanner finds secrets with gitleaks' default rule set. It is safe for concurrent use.
type Scanner struct {
	detector *detect.Detector
}

// New compiles gitleaks' default rule set (about 30 ms) into a Scanner.
func New() (*Scanner, error) {
	silenceGitleaks()
	// A viper instance of our own rather than detect.NewDetectorDefaultConfig, which sets
	// up the process-wide one.
	v := viper.New()
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return nil, fmt.Errorf("read gitleaks rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return nil, fmt.Errorf("read gitleaks rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return nil, fmt.Errorf("compile gitleaks rules: %w", err)
	}
	d := detect.NewDetector(cfg)
	d.MaxDecodeDepth = maxDecodeDepth
	return &Scanner{detector: d}, nil
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

// Scan returns the findings in t, in document order of its canonical encoding.
func (s *Scanner) Scan(ctx context.Context, t *tape.Tape) ([]Finding, error) {
	data, err := tape.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("scan tape: %w", err)
	}
	return s.ScanJSON(ctx, bytes.NewReader(data))
}

// ScanFile returns the findings in the tape file at path, with File set to path.
func (s *Scanner) ScanFile(ctx context.Context, path string) ([]Finding, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scan %s: %w", path, err)
	}
	defer f.Close()
	found, err := s.ScanJSON(ctx, f)
	for i := range found {
		found[i].File = path
	}
	if err != nil {
		return found, fmt.Errorf("scan %s: %w", path, err)
	}
	return found, nil
}

// ScanJSON reads one JSON document (a tape, or any JSON) from r as a stream and returns the
// findings in every string of it, in document order. Memory is bounded by the longest
// string and a memo of fixed size, not by the document. On a JSON error it returns the
// findings before the error and the error.
func (s *Scanner) ScanJSON(ctx context.Context, r io.Reader) ([]Finding, error) {
	sc := &scan{s: s, ctx: ctx, memo: map[[sha256.Size]byte][]hit{}, groups: map[string]int{}}
	err := walkStrings(r, sc.visit)
	return sc.found, err
}

// memoLimit bounds the distinct strings a scan remembers: about 6 MB.
const memoLimit = 1 << 16

// hit is a secret in one string: where it starts (in bytes of the string) and the rule.
type hit struct {
	offset int
	rule   string
	secret string
}

// scan is the state of one document's scan.
type scan struct {
	s     *Scanner
	ctx   context.Context
	found []Finding
	// memo holds the hits of each distinct string already scanned: a tape repeats its
	// conversation in every request, and its tool definitions, and the normalized fields
	// repeat the raw bodies.
	memo   map[[sha256.Size]byte][]hit
	groups map[string]int
	seen   int
}

func (sc *scan) visit(w *walker, value string) error {
	if sc.seen++; sc.seen%256 == 0 {
		if err := sc.ctx.Err(); err != nil {
			return err
		}
	}
	field := w.field()
	class := classOf(field)
	if class == opaque {
		return nil
	}
	hits, err := sc.hits(field, value)
	if err != nil {
		return err
	}
	var ptr string
	for _, h := range hits {
		if class == protocolID && isGeneric(h.rule) {
			continue
		}
		if ptr == "" {
			ptr = w.pointer()
		}
		g, ok := sc.groups[h.secret]
		if !ok {
			g = len(sc.groups) + 1
			sc.groups[h.secret] = g
		}
		sc.found = append(sc.found, Finding{Pointer: ptr, Offset: h.offset, Rule: h.rule, Preview: preview(h.secret), Secret: g})
	}
	return nil
}

// hits scans one string. gitleaks sees it as "FIELD: VALUE", the way it would see it in a
// JSON or YAML file, so that the generic rules find a secret by the name that holds it
// (a header x-custom-key, a member password).
func (sc *scan) hits(field, value string) ([]hit, error) {
	prefix := ""
	if field != "" {
		prefix = field + ": "
	}
	// gitleaks' rules end a secret at white space, a quote or ';', and a query string
	// ends one with '&': turned into a line break, byte for byte, so offsets hold.
	text := strings.ReplaceAll(prefix+value, "&", "\n")
	key := sha256.Sum256([]byte(text))
	if hs, ok := sc.memo[key]; ok {
		return hs, nil
	}
	found := sc.s.detector.DetectContext(sc.ctx, detect.Fragment{Raw: text})
	if err := sc.ctx.Err(); err != nil {
		return nil, err
	}
	var hs []hit
	for _, f := range found {
		off := max(locate(text, f)-len(prefix), 0)
		h := hit{offset: off, rule: f.RuleID, secret: f.Secret}
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
	if len(sc.memo) >= memoLimit {
		// Bounded memory on a tape of many distinct strings (a long stream's chunks); the
		// strings that repeat (the conversation, tool definitions) come back at once.
		clear(sc.memo)
	}
	sc.memo[key] = hs
	return hs, nil
}

// locate returns the byte offset of f's secret in text. gitleaks gives the match's line
// and column, counted its own way; the match and the secret are then looked for from there.
func locate(text string, f report.Finding) int {
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
			return start + i
		}
	}
	return start
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
	results := make([]FileResult, len(paths))
	s, err := Default()
	for i, p := range paths {
		results[i] = FileResult{Path: p, Err: err}
	}
	if err != nil {
		return results
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range results {
		if err := ctx.Err(); err != nil {
			results[i].Err = err
			continue
		}
		g.Go(func() error {
			results[i].Findings, results[i].Err = s.ScanFile(ctx, paths[i])
			return nil
		})
	}
	_ = g.Wait()
	return results
}

// Check scans the tape files at paths and returns nil when none holds a secret, for a
// gate such as dataset export. Otherwise the error is a *FoundError naming file, JSON
// pointer and rule of each finding, joined with the errors of files that could not be
// scanned: a file the scanner cannot read is not known to be clean.
func Check(ctx context.Context, paths ...string) error {
	var found []Finding
	var errs []error
	for _, r := range ScanFiles(ctx, paths) {
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
	for i, f := range e.Findings {
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
